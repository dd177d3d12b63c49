package repl

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// table lays out styled cells in columns two spaces apart; widths are
// measured on the rendered text (lipgloss.Width ignores escape codes).
// Columns listed in right are right-aligned (numbers).
type table struct {
	head  []string
	rows  [][]string
	right map[int]bool
}

func newTable(head ...string) *table { return &table{head: head, right: map[int]bool{}} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) alignRight(cols ...int) *table {
	for _, c := range cols {
		t.right[c] = true
	}
	return t
}

func (t *table) render(st *Styles) string {
	n := len(t.head)
	for _, r := range t.rows {
		n = max(n, len(r))
	}
	w := make([]int, n)
	for i, h := range t.head {
		w[i] = lipgloss.Width(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			w[i] = max(w[i], lipgloss.Width(c))
		}
	}
	var b strings.Builder
	line := func(cells []string, style func(string) string) {
		var parts []string
		for i := range n {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", w[i]-lipgloss.Width(c))
			if style != nil {
				c = style(c)
			}
			if t.right[i] {
				parts = append(parts, pad+c)
			} else {
				parts = append(parts, c+pad)
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(parts, "  "), " "))
		b.WriteByte('\n')
	}
	if len(t.head) > 0 {
		line(t.head, func(s string) string { return st.Header.Render(s) })
	}
	for _, r := range t.rows {
		line(r, nil)
	}
	return b.String()
}
