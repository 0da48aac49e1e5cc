package retry

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis ends a text Truncate cut.
const Ellipsis = "…"

// Truncate bounds free text (an error message, a failure reason) stored
// where size and encoding are limited (a PostgreSQL text column, an SQS or
// DynamoDB attribute): valid UTF-8 of at most n bytes, invalid sequences
// and NUL as U+FFFD, cut at a rune boundary and ended with Ellipsis (within
// n bytes; n < len(Ellipsis) cuts without it).
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, string(utf8.RuneError))
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", string(utf8.RuneError))
	}
	if len(s) <= n {
		return s
	}
	suffix := Ellipsis
	if n < len(suffix) {
		suffix = ""
	}
	cut := n - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}
