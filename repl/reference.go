package repl

import (
	"fmt"
	"strings"
)

// helpEntry is one command as `help` and the README reference show it.
type helpEntry struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	Group   string   `json:"group"`
	Usage   string   `json:"usage"`
	Help    string   `json:"help"`
}

func helpIndex() []helpEntry {
	var out []helpEntry
	for _, g := range groups {
		for _, c := range commands {
			if c.group == g {
				out = append(out, helpEntry{Name: c.name(), Aliases: c.aliases[1:], Group: g, Usage: c.usage, Help: c.summary()})
			}
		}
	}
	return out
}

// helpText is `help`: the commands by group with their summaries.
func helpText() string {
	var b strings.Builder
	for _, g := range groups {
		fmt.Fprintf(&b, "%s:\n", g)
		for _, c := range commands {
			if c.group != g {
				continue
			}
			names := c.name()
			if len(c.aliases) > 1 {
				names += " (" + strings.Join(c.aliases[1:], ", ") + ")"
			}
			fmt.Fprintf(&b, "  %-22s %s\n", names, c.summary())
		}
	}
	b.WriteString("`help COMMAND` explains one.\n")
	return b.String()
}

// CommandHelp is the debugger's `help NAME` as plain text (no styles): the
// usage line, the help wrapped at 78 columns and the aliases, for `hsdb
// help NAME` typed at the shell. ok is false when NAME is no debugger
// command or alias.
func CommandHelp(name string) (text string, ok bool) {
	c := lookup(name)
	if c == nil {
		return "", false
	}
	text = c.usage + "\n" + wrap(c.help, 78)
	if len(c.aliases) > 1 {
		text += "\naliases: " + strings.Join(c.aliases[1:], ", ")
	}
	return text, true
}

// CommandNames lists the debugger's commands by name (each command's
// first alias, in the command table's order), for a did-you-mean at the
// shell (`hsdb help brek`).
func CommandNames() []string {
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.aliases[0])
	}
	return names
}

// Reference returns the Markdown command reference that README.md holds
// between <!-- commands:begin --> and <!-- commands:end -->, generated from
// the command table (go generate ./repl rewrites it; a test fails when it
// drifts).
func Reference() string {
	var b strings.Builder
	b.WriteString("Generated from the command table (`go generate ./repl`); `help COMMAND` in hsdb says the same.\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "\n### %s\n\n| command | aliases | what it does |\n|---|---|---|\n", strings.ToUpper(g[:1])+g[1:])
		for _, c := range commands {
			if c.group != g {
				continue
			}
			al := strings.Join(c.aliases[1:], ", ")
			help := strings.ReplaceAll(strings.ReplaceAll(c.help, "\n", " "), "|", `\|`)
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", strings.ReplaceAll(c.usage, "|", `\|`), al, help)
		}
	}
	return b.String()
}

const (
	refBegin = "<!-- commands:begin -->"
	refEnd   = "<!-- commands:end -->"
)

// SpliceReference returns readme with the text between the markers
// replaced by Reference(). Error: a marker is missing.
func SpliceReference(readme string) (string, error) {
	i := strings.Index(readme, refBegin)
	j := strings.Index(readme, refEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("README: markers %s ... %s not found", refBegin, refEnd)
	}
	return readme[:i+len(refBegin)] + "\n" + Reference() + readme[j:], nil
}

// wrap folds text at width on spaces, keeping its newlines.
func wrap(text string, width int) string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				out = append(out, line)
				line = w
				continue
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
