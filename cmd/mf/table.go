package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxWidth is the widest line the commands' tables print: a path or note
// that does not fit continues on the next lines (Wrap).
const maxWidth = 160

// Table is the one table printer of the commands: columns aligned by rune
// count, two spaces apart, some right-aligned, rows that may carry note
// lines. Its first row is usually the header. Table is a table being built; its first row is usually the header.
type Table struct {
	// Right marks the right-aligned columns (numbers); the others are
	// left-aligned.
	Right []bool
	rows  []tableRow
}

type tableRow struct{ cells, notes []string }

// Row adds a row of cells.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, tableRow{cells: cells}) }

// RowNotes adds a row of cells printed with the notes, unaligned, under it.
func (t *Table) RowNotes(cells, notes []string) { t.rows = append(t.rows, tableRow{cells, notes}) }

// Write prints the rows, each cell padded to its column's widest, without
// trailing spaces, each row followed by its notes.
func (t *Table) Write(w io.Writer) error {
	var width []int
	for _, r := range t.rows {
		for i, c := range r.cells {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r.cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.Right) && t.Right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
		for _, n := range r.notes {
			if _, err := fmt.Fprintln(w, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// Wrap breaks s at spaces into lines of at most width columns, the first
// prefixed by indent and the others by hang (a word longer than a line is
// cut).
func Wrap(s, indent, hang string, width int) []string {
	var lines []string
	prefix := indent
	line := prefix
	flush := func() {
		lines = append(lines, line)
		prefix = hang
		line = prefix
	}
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(prefix+word) > width {
			if line != prefix {
				flush()
			}
			r := []rune(word)
			cut := max(width-utf8.RuneCountInString(prefix), 1)
			line += string(r[:cut])
			word = string(r[cut:])
			flush()
		}
		switch {
		case line == prefix:
			line += word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width:
			flush()
			line += word
		default:
			line += " " + word
		}
	}
	if line != prefix {
		lines = append(lines, line)
	}
	return lines
}
