package retry

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short stays", "hola", 10, "hola"},
		{"exact stays", "hola", 4, "hola"},
		{"ascii cut", "abcdefghij", 6, "abc" + Ellipsis},
		{"never splits a rune", "ñññññ", 7, "ññ" + Ellipsis}, // 2+2 bytes + 3 = 7
		{"cut lands inside a rune", "aññññ", 7, "añ" + Ellipsis},
		{"invalid utf-8 replaced", "a\xffb", 10, "a\uFFFDb"},
		{"NUL replaced", "a\x00b", 10, "a\uFFFDb"},
		{"tiny n has no ellipsis", "ñandú", 2, "ñ"},
		{"zero", "abc", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.in, tc.n)
			if got != tc.want {
				t.Fatalf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
			if len(got) > tc.n || !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
				t.Fatalf("Truncate(%q, %d) = %q: too long, invalid or with NUL", tc.in, tc.n, got)
			}
		})
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("mensaje de error: tarjeta rechazada €€€", 13)
	f.Add("\xff\xfe\x00abc", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		got := Truncate(s, n)
		if len(got) > n || !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("Truncate(%q, %d) = %q", s, n, got)
		}
	})
}
