package main

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
	table := &Table{}
	table.Row("ENV", "NAME", "STATUS")
	table.RowNotes([]string{"prod", "mf-cobro", "ok"}, []string{"  path: a → b"})
	table.Row("dev", "∞", "OVER")
	if err := table.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "ENV   NAME      STATUS\n" +
		"prod  mf-cobro  ok\n" +
		"  path: a → b\n" +
		"dev   ∞         OVER\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteRightAlignsNumbersAndTrimsTrailingSpaces(t *testing.T) {
	var b strings.Builder
	table := &Table{Right: []bool{false, true, false}}
	table.Row("item", "usd", "")
	table.Row("requests", "1.25", "")
	table.Row("storage", "10.00", "(30 days)")
	if err := table.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "item        usd\n" +
		"requests   1.25\n" +
		"storage   10.00  (30 days)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
