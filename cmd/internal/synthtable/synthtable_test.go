package synthtable

import (
	"slices"
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	tests := []struct {
		s, indent, hang string
		width           int
		want            []string
	}{
		{"a bb ccc", "", "", 80, []string{"a bb ccc"}},
		{"a bb ccc dddd", "", "  ", 6, []string{"a bb", "  ccc", "  dddd"}},
		{"path: abcdefghij", "> ", "> ", 6, []string{"> path", "> :", "> abcd", "> efgh", "> ij"}},
		{"xx abcdefghij", "> ", "> ", 6, []string{"> xx", "> abcd", "> efgh", "> ij"}},
		{"", "  ", "  ", 10, nil},
	}
	for _, tc := range tests {
		got := Wrap(tc.s, tc.indent, tc.hang, tc.width)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Wrap(%q, %q, %q, %d) = %q, want %q", tc.s, tc.indent, tc.hang, tc.width, got, tc.want)
		}
		for _, l := range got {
			if len([]rune(l)) > tc.width {
				t.Errorf("Wrap(%q): line %q wider than %d", tc.s, l, tc.width)
			}
		}
	}
}

func TestWriteAlignsColumnsAndPrintsNotes(t *testing.T) {
	var b strings.Builder
	Write(&b, []string{"ENV", "NAME", "STATUS"}, []Row{
		{Cells: []string{"prod", "mf-cobro", "ok"}, Notes: []string{"  path: a → b"}},
		{Cells: []string{"dev", "∞", "OVER"}},
	})
	want := "ENV   NAME      STATUS\n" +
		"prod  mf-cobro  ok\n" +
		"  path: a → b\n" +
		"dev   ∞         OVER\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
