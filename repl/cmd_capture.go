package repl

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/check"
	"hsdb/inspect/client"
)

// capturer returns the session's capturer, creating it (and subscribing it
// to every pass, beside the debugger's own hook) on first use.
func (t *Term) capturer() *capture.Capturer {
	if t.capt == nil {
		t.capt = capture.NewCapturer(t.S.Tree(), t.S.E.Dims.Layers)
		t.S.Observers = append(t.S.Observers, t.capt)
	}
	return t.capt
}

// captureView is `capture list`'s result.
type captureView struct {
	Specs     []capture.CaptureSpec `json:"specs"`
	What      string                `json:"what"`
	Sequences []captureSeq          `json:"sequences"`
}

type captureSeq struct {
	Seq    int            `json:"seq"`
	Tokens int            `json:"tokens"`
	Rows   map[string]int `json:"rows"`
}

func cmdCapture(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if len(a) == 0 {
		a = []string{"list"}
	}
	c := t.capturer()
	switch a[0] {
	case "layers", "layer":
		what := capture.WhatStream
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
		layers, err := check.ParseLayers(rest[0])
		if err != nil {
			return fmt.Errorf("capture layers: %w", err)
		}
		if err := c.AddLayers(layers, what); err != nil {
			return err
		}
	case "site":
		if len(a) != 3 {
			return fmt.Errorf("capture site: want SITE TENSOR, e.g. capture site layers.3.mlp output")
		}
		if err := c.AddSite(a[1], a[2]); err != nil {
			return err
		}
	case "clear":
		c.Clear()
	case "list":
	default:
		return fmt.Errorf("capture: unknown %q: want layers, site, list or clear", a[0])
	}
	return t.showCaptures(c)
}

func (t *Term) showCaptures(c *capture.Capturer) error {
	seqs, _, err := c.Result()
	v := captureView{Specs: c.List(), What: c.What()}
	for _, s := range seqs {
		cs := captureSeq{Seq: s.Seq, Tokens: s.Len(), Rows: map[string]int{}}
		for k, x := range s.Tensors {
			cs.Rows[k] = x.Rows()
		}
		v.Sequences = append(v.Sequences, cs)
	}
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
			parts = append(parts, fmt.Sprintf("seq %d: %d tokens", s.Seq, s.Tokens))
		}
		return out + "captured: " + strings.Join(parts, ", ")
	})
	return err
}

// dumpView is `dump`'s result.
type dumpView struct {
	Dir      string            `json:"dir"`
	Manifest *capture.Manifest `json:"manifest"`
}

func cmdDump(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	var dir string
	var opts capture.DumpOptions
	for i := 0; i < len(a); i++ {
		switch {
		case a[i] == "--force":
			opts.Force = true
		case (a[i] == "--dtype" && i+1 < len(a)) || strings.HasPrefix(a[i], "--dtype="):
			v := strings.TrimPrefix(a[i], "--dtype=")
			if a[i] == "--dtype" {
				v = a[i+1]
				i++
			}
			dt, err := tensor.ParseDType(v)
			if err != nil || (dt != tensor.F32 && dt != tensor.BF16 && dt != tensor.F16) {
				return fmt.Errorf("dump --dtype %q: want f32, bf16 or f16", v)
			}
			opts.DType = dt
		case strings.HasPrefix(a[i], "--"):
			return fmt.Errorf("dump: unknown flag %s (want --force, --dtype)", a[i])
		case dir == "":
			dir = a[i]
		default:
			return fmt.Errorf("dump: one DIR expected, got %q and %q", dir, a[i])
		}
	}
	if dir == "" {
		return fmt.Errorf("dump: want DIR [--force] [--dtype f32|bf16|f16]")
	}
	c := t.capturer()
	specs := c.List()
	if len(specs) == 0 {
		return fmt.Errorf("dump: nothing is captured: `capture layers ...` then `run` first")
	}
	seqs, reps, err := c.Result()
	if err != nil {
		return fmt.Errorf("dump: the capture failed: %w", err)
	}
	if len(seqs) == 0 {
		return fmt.Errorf("dump: no sequence captured yet: `run` first")
	}
	e := t.S.E
	info := capture.DumpInfo{Model: capture.ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name()), Layers: c.Layers(), What: c.What()}
	for _, s := range specs {
		if s.Layer < 0 {
			info.Sites = append(info.Sites, capture.SiteInfo{Site: s.Site, Tensor: s.Tensor, Key: s.Key})
		}
	}
	m, err := capture.Dump(dir, seqs, reps, info, opts)
	if err != nil {
		return err
	}
	v := dumpView{Dir: dir, Manifest: m}
	t.emit("dump", v, func() string {
		var lens []string
		for _, s := range m.Sequences {
			lens = append(lens, strconv.Itoa(s.Length))
		}
		out := fmt.Sprintf("dumped %d sequence(s) (%s tokens) to %s: layers %v (%s), %s\n", len(m.Sequences), strings.Join(lens, ", "), dir, m.Capture.Layers, m.Capture.What, m.Capture.DType)
		for _, r := range m.Validation {
			st := r.Status
			if st == "FAIL" {
				st = t.st.Bad.Render(st)
			}
			out += fmt.Sprintf("  %-4s  %-16s  %s\n", st, r.Rule, r.Detail)
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
// into check options over the session's model: its sizes (with every
// integer of its config.json), and its forward pass for layer matching
// unless --no-model.
func (t *Term) checkArgs(cmd, args string) (string, check.CheckOptions, error) {
	var o check.CheckOptions
	a, err := splitArgs(args)
	if err != nil {
		return "", o, fmt.Errorf("%s: %w", cmd, err)
	}
	var path string
	useModel := true
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
			if o.Layers, err = check.ParseLayers(v); err != nil {
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
			useModel = false
		default:
			if strings.HasPrefix(a[i], "--") {
				return "", o, fmt.Errorf("%s: unknown flag %s (want --layers, --tp, --seq-lens, --no-model)", cmd, a[i])
			}
			if path != "" {
				return "", o, fmt.Errorf("%s: one PATH expected, got %q and %q", cmd, path, a[i])
			}
			path = a[i]
		}
	}
	if path == "" {
		return "", o, fmt.Errorf("%s: want PATH [--layers 2,30] [--tp N] [--seq-lens 512,259] [--no-model]", cmd)
	}
	e := t.S.E
	d, err := modelpath.ConfigDims(e.Path)
	if err != nil {
		cp := *e.Dims
		d = &cp
	}
	if d.Named == nil {
		d.Named = map[string]int{}
	}
	for k, v := range e.Dims.Named {
		if _, ok := d.Named[k]; !ok {
			d.Named[k] = v
		}
	}
	o.Dims = d
	if data, _, err := modelpath.ConfigJSON(e.Path); err == nil {
		o.BOS, o.HasBOS, o.Constants, _ = check.ConfigFacts(data)
	}
	if useModel && t.S.Stopped() != nil {
		return "", o, fmt.Errorf("%s: %w: finish it (continue) or start over (run) first, or give --no-model", cmd, client.ErrBusy)
	}
	if useModel {
		o.Model = &capture.Target{Dims: e.Dims, Tree: e.Tree, Info: capture.ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name()),
			Prefill: func(seqs [][]int32, h model.Hook) error {
				return t.S.Borrow(func() error { _, err := e.Prefill(seqs, h, false); return err })
			}}
	}
	return path, o, nil
}

func cmdCheck(t *Term, args string) error {
	path, o, err := t.checkArgs("check", args)
	if err != nil {
		return err
	}
	rep := check.CheckPath(path, o)
	if err := unreadable(rep); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	v := checkView{Path: path, Failed: rep.Failed(), Lines: rep.Lines()}
	t.emit("check", v, func() string { return t.verdictText(v.Lines, v.Failed) })
	return nil
}

func cmdDiff(t *Term, args string) error {
	path, o, err := t.checkArgs("diff", args)
	if err != nil {
		return err
	}
	if o.Model == nil {
		return fmt.Errorf("diff: compares with hsdb's forward pass: drop --no-model")
	}
	rep := check.CheckPath(path, o)
	if err := unreadable(rep); err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	v := checkView{Path: path}
	for _, f := range rep.Files {
		lines, departs := f.DiffLines()
		v.Lines = append(v.Lines, lines...)
		v.Failed = v.Failed || departs
	}
	t.emit("diff", v, func() string { return t.verdictText(v.Lines, v.Failed) })
	return nil
}

// unreadable returns why a check could not read its input at all (the
// path, or every file), or nil.
func unreadable(rep *check.PathReport) error {
	if rep.Err != nil {
		return rep.Err
	}
	if rep.Unreadable() {
		return rep.Files[0].Err
	}
	return nil
}

// verdictText renders check/diff lines, FAIL and departures marked Bad.
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
		b.WriteString(l + "\n")
	}
	if failed {
		b.WriteString(t.st.Bad.Render("invalid") + "\n")
	} else {
		b.WriteString("valid\n")
	}
	return b.String()
}
