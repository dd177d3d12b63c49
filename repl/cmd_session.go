package repl

import (
	"fmt"
	"strings"
)

func cmdSet(t *Term, args string) error {
	name, val, _ := strings.Cut(strings.TrimSpace(args), " ")
	val = strings.TrimSpace(val)
	if name == "var" {
		return cmdSetVar(t, val)
	}
	o := findOption(name)
	if o == nil {
		return fmt.Errorf("set: unknown option %q (want one of %s)", name, strings.Join(optionNames(), ", "))
	}
	if val == "" {
		return fmt.Errorf("set %s: want a value: %s", o.name, o.values)
	}
	// A rejected value leaves every option as it was, whatever the setter
	// did before failing.
	saved := t.opts
	if err := o.set(t, val); err != nil {
		t.opts = saved
		t.restyle()
		return fmt.Errorf("set %s: %w", o.name, err)
	}
	return nil
}

// optionView is one row of `show`.
type optionView struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Values string `json:"values"`
	Help   string `json:"help"`
}

func cmdShow(t *Term, args string) error {
	var rows []optionView
	name := strings.TrimSpace(args)
	for _, o := range optionTable {
		if name == "" || o.name == name || (name == "color" && o.name == "colour") {
			rows = append(rows, optionView{o.name, o.get(t), o.values, o.help})
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("show: unknown option %q (want one of %s)", name, strings.Join(optionNames(), ", "))
	}
	t.emit("options", rows, func() string {
		tb := newTable("option", "value", "values", "")
		for _, r := range rows {
			tb.add(r.Name, r.Value, t.st.Dim.Render(r.Values), t.st.Dim.Render(r.Help))
		}
		return tb.render(t.st)
	})
	return nil
}

func cmdSource(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil || len(a) != 1 {
		return fmt.Errorf("source: want one file")
	}
	return t.Source(a[0])
}

func cmdEcho(t *Term, args string) error {
	t.emit("echo", args, func() string { return args })
	return nil
}

func cmdHelp(t *Term, args string) error {
	args = strings.TrimSpace(args)
	if args == "" {
		t.emit("help", helpIndex(), func() string { return helpText() })
		return nil
	}
	name := strings.Fields(args)[0] // `help set var`, `help info break`: the command's help covers them (gdb's help takes them too)
	c := lookup(name)
	if c == nil {
		return fmt.Errorf("help: unknown command %q%s", name, commandHint(name))
	}
	h := helpEntry{Name: c.name(), Aliases: c.aliases[1:], Group: c.group, Usage: c.usage, Help: c.help}
	t.emit("help", h, func() string {
		s := t.st.Site.Render(c.usage) + "\n" + wrap(c.help, 78)
		if len(c.aliases) > 1 {
			s += "\n" + t.st.Dim.Render("aliases: "+strings.Join(c.aliases[1:], ", "))
		}
		return s
	})
	return nil
}
