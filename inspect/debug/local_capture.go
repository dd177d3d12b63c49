package debug

import (
	"context"
	"errors"
	"fmt"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/check"
	"hsdb/inspect/client"
)

// capturer returns the session's capturer, creating it (and subscribing it
// to every pass, beside the debugger's own hook) on first use.
func (l *Local) capturer() *capture.Capturer {
	if l.capt == nil {
		l.capt = capture.NewCapturer(l.s.E.Tree, l.s.E.Dims.Layers)
		l.s.Observers = append(l.s.Observers, l.capt)
	}
	return l.capt
}

// CaptureLayers records decoder layers' outputs of every pass.
func (l *Local) CaptureLayers(layers []int, what string) error {
	return l.capturer().AddLayers(layers, what)
}

// CaptureSite records a site's per-token tensor of every pass. A site
// the model does not have is named as break names it (the decoder layers
// loaded, and the fused site standing for an HF module).
func (l *Local) CaptureSite(site, tensor string) error {
	if l.s.E.Tree.Site(site) == nil {
		if _, err := ResolveSite(l.s.E.Tree, site); err != nil {
			return fmt.Errorf("%w: %w", capture.ErrCapture, err)
		}
	}
	return l.capturer().AddSite(site, tensor)
}

// ClearCaptures forgets every capture.
func (l *Local) ClearCaptures() error { l.capturer().Clear(); return nil }

// Captures returns what is captured and recorded so far, and the
// recording's error.
func (l *Local) Captures() (client.CaptureList, error) {
	c := l.capturer()
	seqs, _, err := c.Result()
	v := client.CaptureList{Specs: c.List(), What: c.What()}
	for _, s := range seqs {
		cs := client.CapturedSeq{Seq: s.Seq, Tokens: s.Len(), Rows: map[string]int{}}
		for k, x := range s.Tensors {
			cs.Rows[k] = x.Rows()
		}
		v.Sequences = append(v.Sequences, cs)
	}
	return v, err
}

// modelInfo describes the loaded model for a dump's manifest, with what
// the load options changed of its numerics (--dtype, --ep, --w8a8).
func (l *Local) modelInfo() capture.ModelInfo {
	e := l.s.E
	mi := capture.ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name())
	if e.WeightDType != tensor.Invalid {
		mi.WeightDType = e.WeightDType.String()
	}
	mi.ExpertParallel = e.EP
	mi.W8A8 = e.W8A8
	return mi
}

// Dump writes the recorded captures to dir as a validated dump.
func (l *Local) Dump(dir string, opts client.DumpRequest) (*client.Manifest, error) {
	var o capture.DumpOptions
	o.Force, o.Compress = opts.Force, opts.Compress
	format, err := capture.ParseFormat(opts.Format)
	if err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	if opts.DType != "" {
		dt, err := tensor.ParseFloatDType(opts.DType)
		if err != nil {
			return nil, fmt.Errorf("dump --dtype %w", err)
		}
		o.DType = dt
	}
	c := l.capturer()
	specs := c.List()
	if len(specs) == 0 {
		return nil, fmt.Errorf("dump: nothing is captured: `capture layers ...` then `run` first")
	}
	seqs, reps, err := c.Result()
	if err != nil {
		return nil, fmt.Errorf("dump: the capture failed: %w", err)
	}
	if len(seqs) == 0 {
		if st := l.s.Stopped(); st != nil {
			return nil, fmt.Errorf("dump: no sequence captured yet: the pass is stopped at %s (step %d) before any captured site: continue to the end, then dump", st.Site, st.Step)
		}
		return nil, fmt.Errorf("dump: no sequence captured yet: `run` first")
	}
	info := capture.DumpInfo{Model: l.modelInfo(), Layers: c.Layers(), What: c.What(), Faults: c.Under(), Edits: l.s.PassEdits()}
	for _, s := range specs {
		if s.Layer < 0 {
			info.Sites = append(info.Sites, capture.SiteInfo{Site: s.Site, Tensor: s.Tensor, Key: s.Key})
		}
	}
	if info.Plan, err = capture.PlanCaptured(format, specs, c.What(), l.s.E.Dims.Layers); err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	if info.Plan != nil {
		info.Layers, info.Sites = info.Plan.HsdbLayers(), nil
	}
	m, err := capture.Dump(dir, seqs, reps, info, o)
	if errors.Is(err, capture.ErrNotCaptured) {
		if st := l.s.Stopped(); st != nil {
			// A site after the stop has not run in this pass yet.
			err = fmt.Errorf("%w; the pass is stopped at %s (step %d) and has not reached it yet: continue to the end (`disable` keeps the breakpoints from stopping it again), then dump", err, st.Site, st.Step)
		} else if at := l.s.killedAt; at != "" {
			// `kill` aborted the pass before it reached the site.
			again := "`run` to the end"
			if l.s.killedStep > 0 {
				again = "`gen 1` to run that decode step again to its end"
			}
			err = fmt.Errorf("%w; `kill` aborted the last pass at %s, before it reached it: %s (`disable` keeps the breakpoints from stopping it), then dump", err, at, again)
		}
	}
	return m, err
}

// target is this engine as check and the capture job run it: each prefill
// borrows the engine from the session (client.ErrBusy while a pass is
// stopped).
func (l *Local) target() *capture.Target {
	e := l.s.E
	return &capture.Target{Dims: e.Dims, Tree: e.Tree, Info: l.modelInfo(),
		Prefill: func(seqs [][]int32, h model.Hook) error {
			return l.s.Borrow(func() error { _, err := e.Prefill(seqs, h, false); return err })
		},
		Interrupt: e.Interrupt}
}

// checkOptions are check's options over this model: its sizes (with every
// integer of its config.json), and its forward pass for layer matching
// unless req.NoModel. Error: client.ErrBusy while a pass is stopped and
// the model is wanted; cmd ("check" or "diff") decides whether the error
// offers --no-model, which only check takes.
func (l *Local) checkOptions(req client.CheckRequest, cmd string) (check.CheckOptions, error) {
	o := check.CheckOptions{Layers: req.Layers, TP: req.TP, SeqLens: req.SeqLens}
	e := l.s.E
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
	if err := check.LayersInRange(req.Layers, d, "the model"); err != nil {
		return o, err
	}
	if data, _, err := modelpath.ConfigJSON(e.Path); err == nil {
		o.BOS, o.HasBOS, o.Constants, _ = check.ConfigFacts(data)
		o.ConfigSHA256 = check.ConfigSHA256(data)
	}
	if req.NoModel {
		return o, nil
	}
	if l.s.Stopped() != nil {
		alt := ", or give --no-model"
		if cmd == "diff" {
			alt = "" // diff refuses --no-model
		}
		return o, fmt.Errorf("%w: %s runs passes of its own; let it finish first (%s)%s", client.ErrBusy, cmd, finishHint, alt)
	}
	o.Model = l.target()
	o.ModelW8A8 = e.W8A8
	return o, nil
}

// Check validates the captures at path against this model.
func (l *Local) Check(path string, req client.CheckRequest) (client.CheckReport, error) {
	o, err := l.checkOptions(req, "check")
	if err != nil {
		return client.CheckReport{Path: path}, err
	}
	return check.CheckPath(path, o).Report(false, req.Output)
}

// Diff compares the captures at path with this model's forward pass.
func (l *Local) Diff(path string, req client.CheckRequest) (client.CheckReport, error) {
	if req.NoModel {
		return client.CheckReport{Path: path}, fmt.Errorf("diff compares with hsdb's forward pass: it needs the model")
	}
	o, err := l.checkOptions(req, "diff")
	if err != nil {
		return client.CheckReport{Path: path}, err
	}
	return check.CheckPath(path, o).Report(true, req.Output)
}

// CaptureJob runs `hsdb capture` on this engine.
func (l *Local) CaptureJob(ctx context.Context, req client.JobRequest) (*client.JobResult, error) {
	var dt tensor.DType
	if req.DType != "" {
		var err error
		if dt, err = tensor.ParseFloatDType(req.DType); err != nil {
			return nil, fmt.Errorf("--save-dtype %w", err)
		}
	}
	if req.Inputs == nil {
		return nil, fmt.Errorf("capture job: no inputs")
	}
	return capture.RunCaptureJob(ctx, l.target(), req.Inputs, capture.JobOptions{Layers: req.Layers, What: req.What, Out: req.Out,
		Force: req.Force, DType: dt, MaxBatchTokens: req.MaxBatchTokens, Progress: req.Progress, AfterBatch: req.AfterBatch,
		Plan: req.Plan, Compress: req.Compress, Writers: req.Writers})
}
