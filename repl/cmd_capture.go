package repl

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/tensor"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

func cmdCapture(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if len(a) == 0 {
		a = []string{"list"}
	}
	switch a[0] {
	case "layers", "layer":
		what := "" // stream
		var rest []string
		for i := 1; i < len(a); i++ {
			switch {
			case a[i] == "--what" && i+1 < len(a):
				what = a[i+1]
				i++
			case strings.HasPrefix(a[i], "--what="):
				what = strings.TrimPrefix(a[i], "--what=")
			default:
				rest = append(rest, a[i])
			}
		}
		if len(rest) != 1 {
			return fmt.Errorf("capture layers: want a layer list, e.g. capture layers 2,30,58,60 [--what stream|hidden_states|residual]")
		}
		var layers []int
		if strings.EqualFold(rest[0], "eagle3") { // as hsdb capture --layers eagle3 takes it
			m, err := t.c.Model()
			if err != nil {
				return err
			}
			if layers, err = client.Eagle3Layers(m.Layers); err != nil {
				return fmt.Errorf("capture layers eagle3: %w", err)
			}
		} else if layers, err = client.ParseLayers(rest[0]); err != nil {
			return fmt.Errorf("capture layers: %w", err)
		}
		if err := t.c.CaptureLayers(layers, what); err != nil {
			return err
		}
	case "site":
		if len(a) != 3 {
			return fmt.Errorf("capture site: want SITE TENSOR, e.g. capture site layers.3.mlp output")
		}
		if err := t.c.CaptureSite(a[1], a[2]); err != nil {
			return err
		}
	case "clear", "list":
		if len(a) > 1 {
			// `capture clear` forgets them all: a user naming one must
			// not lose the rest.
			return fmt.Errorf("capture %s takes no arguments (it %s every capture), got %q", a[0], map[string]string{"clear": "forgets", "list": "lists"}[a[0]], strings.Join(a[1:], " "))
		}
		if a[0] == "clear" {
			if err := t.c.ClearCaptures(); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("capture: unknown %q: want layers, site, list or clear", a[0])
	}
	return t.showCaptures()
}

// showCaptures prints `capture list`, then returns the recording's error
// if it failed.
func (t *Term) showCaptures() error {
	v, err := t.c.Captures()
	t.emit("captures", v, func() string {
		if len(v.Specs) == 0 {
			return t.st.Dim.Render("no captures (capture layers 2,30 [--what stream|hidden_states|residual], capture site SITE TENSOR)")
		}
		tb := newTable("key", "site", "tensor")
		for _, s := range v.Specs {
			tb.add(s.Key, t.st.Site.Render(s.Site), s.Tensor)
		}
		out := tb.render(t.st)
		if len(v.Sequences) == 0 {
			return out + t.st.Dim.Render("nothing captured yet: `run` (and `gen`) record them")
		}
		var parts []string
		for _, s := range v.Sequences {
			// Keys short of the sequence's tokens: the pass ended before
			// their site (kill, an interrupted run); dump would refuse.
			var short []string
			for _, sp := range v.Specs {
				if n := s.Rows[sp.Key]; n < s.Tokens {
					short = append(short, fmt.Sprintf("%s: %d of %s", sp.Key, n, plural.N(s.Tokens, "row")))
				}
			}
			p := fmt.Sprintf("seq %d: %s", s.Seq, plural.N(s.Tokens, "token"))
			if len(short) > 0 {
				p += " (" + t.st.Warn.Render(strings.Join(short, ", ")) + ")"
			}
			parts = append(parts, p)
		}
		return out + "captured: " + strings.Join(parts, ", ")
	})
	return err
}

// dumpView is `dump`'s result.
type dumpView struct {
	Dir      string           `json:"dir"`
	Manifest *client.Manifest `json:"manifest"`
	// NotWritten are the captures a trainer format has no place for
	// (client.LeftOut), left out of its files.
	NotWritten []string `json:"not_written,omitempty"`
}

func cmdDump(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	var dir string
	var opts client.DumpRequest
	for i := 0; i < len(a); i++ {
		switch {
		case a[i] == "--force":
			opts.Force = true
		case a[i] == "--compress":
			opts.Compress = true
		case (a[i] == "--format" && i+1 < len(a)) || strings.HasPrefix(a[i], "--format="):
			v := strings.TrimPrefix(a[i], "--format=")
			if a[i] == "--format" {
				v = a[i+1]
				i++
			}
			if opts.Format != "" && opts.Format != v {
				return fmt.Errorf("dump: --format given twice, as %q and %q: give one", opts.Format, v)
			}
			opts.Format = v
		case (a[i] == "--dtype" && i+1 < len(a)) || strings.HasPrefix(a[i], "--dtype="):
			v := strings.TrimPrefix(a[i], "--dtype=")
			if a[i] == "--dtype" {
				v = a[i+1]
				i++
			}
			dt, err := tensor.ParseFloatDType(v)
			if err != nil {
				return fmt.Errorf("dump --dtype %w", err)
			}
			if opts.DType != "" && opts.DType != dt.String() {
				return fmt.Errorf("dump: --dtype given twice, as %s and %s: give one", opts.DType, dt)
			}
			opts.DType = dt.String()
		case a[i] == "--format" || a[i] == "--dtype":
			return fmt.Errorf("dump: %s needs a value (--format hsdb|speculators|specforge, --dtype f32|bf16|f16)", a[i])
		case strings.HasPrefix(a[i], "--"):
			return fmt.Errorf("dump: unknown flag %s (want --force, --dtype, --format, --compress)", a[i])
		case dir == "":
			dir = a[i]
		default:
			return fmt.Errorf("dump: one DIR expected, got %q and %q", dir, a[i])
		}
	}
	if dir == "" {
		return fmt.Errorf("dump: want DIR [--force] [--dtype f32|bf16|f16] [--format hsdb|speculators|specforge] [--compress]")
	}
	list, err := t.c.Captures() // what was captured, for what a trainer format leaves out
	if err != nil {
		return err
	}
	m, err := t.c.Dump(dir, opts)
	if err != nil {
		return err
	}
	v := dumpView{Dir: dir, Manifest: m, NotWritten: client.LeftOut(m, list.Specs)}
	t.emit("dump", v, func() string {
		var lens []string
		for _, s := range m.Sequences {
			lens = append(lens, strconv.Itoa(s.Length))
		}
		tokens := strings.Join(lens, ", ") + " tokens"
		if len(m.Sequences) == 1 {
			tokens = plural.N(m.Sequences[0].Length, "token")
		}
		var what []string
		if len(m.Capture.Layers) > 0 {
			what = append(what, fmt.Sprintf("layers %s (%s)", joinInts(m.Capture.Layers), m.Capture.What)) // as capture layers takes them
		}
		if len(m.Capture.Sites) > 0 {
			var keys []string
			for _, x := range m.Capture.Sites {
				keys = append(keys, x.Key)
			}
			what = append(what, "sites "+strings.Join(keys, ", "))
		}
		if m.Capture.Format != "" { // a trainer's files: its ids and what each is, as hsdb capture says
			what = []string{fmt.Sprintf("%s ids %s (%s)", m.Capture.Format, joinInts(m.Capture.FormatIDs), m.Capture.Sources())}
		}
		if len(what) == 0 {
			what = []string{"nothing captured"}
		}
		out := fmt.Sprintf("dumped %s (%s) to %s: %s, %s\n", plural.N(len(m.Sequences), "sequence"), tokens, dir, strings.Join(what, "; "), m.Capture.DTypeName())
		if n := client.Eagle3AuxNote(m); n != "" {
			out += t.st.Warn.Render("note: "+n) + "\n"
		}
		if n := client.LeftOutNote(m, list.Specs); n != "" {
			out += t.st.Warn.Render("note: "+n) + "\n"
		}
		// What the manifest records against the data, said where the
		// dump is made and not only by a later check.
		if len(m.Faults) > 0 {
			out += t.st.Warn.Render("note: written under INJECTED FAULTS (a rehearsal, not data to train on; check fails it): "+strings.Join(m.Faults, "; ")) + "\n"
		}
		if len(m.Edits) > 0 {
			out += t.st.Warn.Render("note: the values hold the pass's edits (manifest \"edits\"): "+strings.Join(m.Edits, "; ")) + "\n"
		}
		for _, r := range m.Validation {
			st := r.Status
			if st == "FAIL" {
				st = t.st.Bad.Render(st)
			}
			out += fmt.Sprintf("  %-4s  %-*s  %s\n", st, client.RuleWidth, r.Rule, r.Detail)
		}
		return out
	})
	return nil
}

// checkView is `check` and `diff`'s result.
type checkView struct {
	Path   string   `json:"path"`
	Failed bool     `json:"failed"`
	Lines  []string `json:"lines"`
}

// checkArgs reads PATH [--layers L] [--tp N] [--seq-lens A,B] [--no-model]
// into a check request over the session's model.
func checkArgs(cmd, args string) (string, client.CheckRequest, error) {
	var o client.CheckRequest
	a, err := splitArgs(args)
	if err != nil {
		return "", o, fmt.Errorf("%s: %w", cmd, err)
	}
	flags := []string{"--layers", "--tp", "--seq-lens"} // diff runs the model: no --no-model
	if cmd == "check" {
		flags = append(flags, "--no-model")
	}
	var path string
	for i := 0; i < len(a); i++ {
		flag, val, hasVal := strings.Cut(a[i], "=")
		needVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(a) {
				return "", fmt.Errorf("%s: %s wants a value", cmd, flag)
			}
			i++
			return a[i], nil
		}
		switch flag {
		case "--layers":
			v, err := needVal()
			if err != nil {
				return "", o, err
			}
			if o.Layers, err = client.ParseLayers(v); err != nil {
				return "", o, fmt.Errorf("%s --layers: %w", cmd, err)
			}
		case "--tp":
			v, err := needVal()
			if err != nil {
				return "", o, err
			}
			if o.TP, err = strconv.Atoi(v); err != nil || o.TP < 1 {
				return "", o, fmt.Errorf("%s --tp %q: want a positive integer", cmd, v)
			}
		case "--seq-lens":
			v, err := needVal()
			if err != nil {
				return "", o, err
			}
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n <= 0 {
					return "", o, fmt.Errorf("%s --seq-lens: %q is not a positive length", cmd, f)
				}
				o.SeqLens = append(o.SeqLens, n)
			}
		case "--no-model":
			o.NoModel = true
		default:
			if strings.HasPrefix(a[i], "--") {
				return "", o, fmt.Errorf("%s: unknown flag %s (want %s)", cmd, a[i], strings.Join(flags, ", "))
			}
			if path != "" {
				return "", o, fmt.Errorf("%s: one PATH expected, got %q and %q", cmd, path, a[i])
			}
			path = a[i]
		}
	}
	if path == "" {
		return "", o, fmt.Errorf("%s: want PATH [--layers 2,30] [--tp N] [--seq-lens 512,259]%s", cmd, map[bool]string{true: " [--no-model]"}[cmd == "check"])
	}
	return path, o, nil
}

func cmdCheck(t *Term, args string) error {
	path, o, err := checkArgs("check", args)
	if err != nil {
		return err
	}
	rep, err := t.c.Check(path, o)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	v := checkView{Path: path, Failed: rep.Failed, Lines: rep.Lines}
	t.emit("check", v, func() string { return t.verdictText(v.Lines, v.Failed) })
	return verdictErr("check", path, v.Failed)
}

// verdictErr fails a check or diff whose verdict is not valid (problems
// found, or for diff nothing comparable), after its report is printed: a
// failed assertion on the capture, as `hsdb check` and `hsdb diff` exit
// non-zero, so that a script (`hsdb -x`, `source`) stops there as gdb's
// scripts stop on a failing command (`set errors continue` goes on).
func verdictErr(cmd, path string, failed bool) error {
	if !failed {
		return nil
	}
	return fmt.Errorf("%s %s: the verdict is not valid (the report above says why)", cmd, path)
}

func cmdDiff(t *Term, args string) error {
	path, o, err := checkArgs("diff", args)
	if err != nil {
		return err
	}
	if o.NoModel {
		return fmt.Errorf("diff: compares with hsdb's forward pass: drop --no-model")
	}
	rep, err := t.c.Diff(path, o)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	v := checkView{Path: path, Failed: rep.Failed || !rep.Comparable, Lines: rep.Lines} // no verdict is not a pass
	t.emit("diff", v, func() string { return t.verdictText(v.Lines, v.Failed) })
	return verdictErr("diff", path, v.Failed)
}

// verdictText renders check/diff lines, FAIL and departures marked Bad.
// The lines end on the verdict (a file's or a directory's "verdict: …",
// or the summary's header), as `hsdb check` prints them; nothing is added
// after it (a bare "valid" or "invalid" repeated it, and called "nothing
// comparable" invalid).
func (t *Term) verdictText(lines []string, failed bool) string {
	var b strings.Builder
	for _, l := range lines {
		trim := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trim, "FAIL"), strings.HasPrefix(trim, "first departure"), strings.HasPrefix(trim, "diagnosis:"):
			l = t.st.Bad.Render(l)
		case strings.HasPrefix(trim, "skip"):
			l = t.st.Dim.Render(l)
		}
		if strings.HasPrefix(trim, "verdict: ") && failed {
			l = t.st.Bad.Render(l)
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
