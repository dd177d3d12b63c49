package repl

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles are the semantic styles of everything the REPL prints, built from
// a renderer bound to the real output stream: with colour off (piped
// output, tests, --json) every style renders plain text.
type Styles struct {
	Prompt lipgloss.Style // the prompt
	Site   lipgloss.Style // site paths
	Shape  lipgloss.Style // shapes and dtypes
	Number lipgloss.Style // ordinary numbers
	Header lipgloss.Style // table headers
	Warn   lipgloss.Style // noteworthy: a stop reason, a sharded label
	Bad    lipgloss.Style // NaN/Inf counts, rank divergence
	Good   lipgloss.Style // "equal"
	Error  lipgloss.Style // error messages
	Dim    lipgloss.Style // secondary text (gathered rows, hints)
}

// NewStyles returns the styles for w; colour false forces plain text,
// true uses what the terminal supports.
func NewStyles(w io.Writer, colour bool) *Styles {
	r := lipgloss.NewRenderer(w)
	if !colour {
		r.SetColorProfile(termenv.Ascii)
	} else if r.ColorProfile() == termenv.Ascii {
		r.SetColorProfile(termenv.ANSI256)
	}
	n := r.NewStyle
	return &Styles{
		Prompt: n().Foreground(lipgloss.Color("12")).Bold(true),
		Site:   n().Foreground(lipgloss.Color("14")).Bold(true),
		Shape:  n().Foreground(lipgloss.Color("13")),
		Number: n(),
		Header: n().Bold(true).Underline(true),
		Warn:   n().Foreground(lipgloss.Color("11")),
		Bad:    n().Foreground(lipgloss.Color("9")).Bold(true),
		Good:   n().Foreground(lipgloss.Color("10")),
		Error:  n().Foreground(lipgloss.Color("9")),
		Dim:    n().Faint(true),
	}
}
