package repl

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"hsdb/inspect/stats"
)

// options are what `set` changes and `show` lists.
type options struct {
	colour          string   // on, off, auto
	precision       int      // significant digits of printed numbers
	stats           []string // statistics print shows, in order
	continueOnError bool     // scripts go on after a failing command
	echo            bool     // scripts echo each command
	bins            int      // histogram bins
	width           int      // histogram bar width in characters
	json            bool     // one JSON object per result
}

func defaultOptions() options {
	return options{colour: "auto", precision: 4, stats: []string{"mean", "std", "min", "max", "absmax", "l2", "nan", "inf"},
		echo: true, bins: 20, width: 40}
}

// option is one settable option: its name, allowed values, and accessors.
// set must leave the option unchanged when it returns an error (cmdSet
// also restores every option then).
type option struct {
	name, values, help string
	get                func(t *Term) string
	set                func(t *Term, v string) error
}

func onOff(v string) (bool, error) {
	switch v {
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q: want on or off", v)
}

func showOnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func intIn(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q: want an integer in [%d, %d]", v, lo, hi)
	}
	return n, nil
}

// setInt stores v in *dst when it is an integer in [lo, hi]; otherwise it
// returns the error and leaves *dst as it was.
func setInt(dst *int, v string, lo, hi int) error {
	n, err := intIn(v, lo, hi)
	if err != nil {
		return err
	}
	*dst = n
	return nil
}

// setOnOff stores v in *dst when it is on or off (true/false, 1/0);
// otherwise it returns the error and leaves *dst as it was.
func setOnOff(dst *bool, v string) error {
	b, err := onOff(v)
	if err != nil {
		return err
	}
	*dst = b
	return nil
}

var optionTable = []option{
	{"colour", "on|off|auto", "colour and bold in tables (auto: when the output is a terminal)",
		func(t *Term) string { return t.opts.colour },
		func(t *Term, v string) error {
			if v == "color" || (v != "on" && v != "off" && v != "auto") {
				return fmt.Errorf("%q: want on, off or auto", v)
			}
			t.opts.colour = v
			t.restyle()
			return nil
		}},
	{"precision", "1-17", "significant digits of printed statistics",
		func(t *Term) string { return strconv.Itoa(t.opts.precision) },
		func(t *Term, v string) error { return setInt(&t.opts.precision, v, 1, 17) }},
	{"stats", strings.Join(stats.StatNames, ","), "statistics `print` shows, in order",
		func(t *Term) string { return strings.Join(t.opts.stats, ",") },
		func(t *Term, v string) error {
			var out []string
			// Commas or spaces between statistics, as print lists them.
			for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
				if _, ok := (stats.Stats{}).Get(s); !ok || s == "norm" {
					return fmt.Errorf("statistic %q: want some of %s", s, strings.Join(stats.StatNames, ","))
				}
				out = append(out, s)
			}
			if len(out) == 0 {
				return fmt.Errorf("want some of %s", strings.Join(stats.StatNames, ","))
			}
			t.opts.stats = out
			return nil
		}},
	{"errors", "stop|continue", "whether a script stops at the first failing command",
		func(t *Term) string {
			if t.opts.continueOnError {
				return "continue"
			}
			return "stop"
		},
		func(t *Term, v string) error {
			switch v {
			case "stop", "continue":
				t.opts.continueOnError = v == "continue"
				return nil
			}
			return fmt.Errorf("%q: want stop or continue", v)
		}},
	{"echo", "on|off", "scripts print each command before its output",
		func(t *Term) string { return showOnOff(t.opts.echo) },
		func(t *Term, v string) error { return setOnOff(&t.opts.echo, v) }},
	{"bins", "1-200", "histogram bins",
		func(t *Term) string { return strconv.Itoa(t.opts.bins) },
		func(t *Term, v string) error { return setInt(&t.opts.bins, v, 1, 200) }},
	{"width", "10-200", "histogram bar width in characters",
		func(t *Term) string { return strconv.Itoa(t.opts.width) },
		func(t *Term, v string) error { return setInt(&t.opts.width, v, 10, 200) }},
	{"json", "on|off", "print one JSON object per command result (NaN, Inf, -Inf as strings; undefined statistics as null)",
		func(t *Term) string { return showOnOff(t.opts.json) },
		func(t *Term, v string) error {
			if err := setOnOff(&t.opts.json, v); err != nil {
				return err
			}
			t.restyle()
			return nil
		}},
}

func findOption(name string) *option {
	if name == "color" {
		name = "colour"
	}
	for i := range optionTable {
		if optionTable[i].name == name {
			return &optionTable[i]
		}
	}
	return nil
}

func optionNames() []string {
	var out []string
	for _, o := range optionTable {
		out = append(out, o.name)
	}
	sort.Strings(out)
	return out
}
