// Package text holds the project's one way of bounding free text (error
// messages, failure reasons) before it is stored somewhere with a size limit
// and an encoding rule: a PostgreSQL text column, an SQS message attribute, a
// DynamoDB attribute.
package text

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis marks a truncated text.
const Ellipsis = "…"

// Truncate returns s as valid UTF-8 of at most n bytes. Invalid byte
// sequences and NUL characters (which PostgreSQL text and SQS attributes
// refuse) become U+FFFD. When s is longer than n bytes it is cut at a rune
// boundary, never inside a multi-byte character, and ends with Ellipsis
// (still within n bytes). n < len(Ellipsis) cuts without the ellipsis.
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
