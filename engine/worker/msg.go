package worker

import (
	"fmt"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Message kinds. The worker speaks first (hello); then the front assigns a
// rank and the worker loads it. In a step the worker drives (want, visit,
// collective, done) and the front answers; while a visit is open the
// front drives (moments, to-host, memory, then resume or abort). A step
// and a resume carry the site filter (encFilter); an interrupt may come at
// any time, and a worker in a step answers it with its position at once
// (the front reads it in the step).
const (
	kindError byte = iota + 1
	kindHello
	kindAssign
	kindLoaded
	kindStep
	kindWant
	kindAnswer
	kindVisit
	kindMoments
	kindMomentsReply
	kindToHost
	kindValues
	kindResume
	kindAbort
	kindCollective
	kindDone
	kindMemory
	kindMemoryReply
	kindQuit
	kindPipeSend
	kindPipeRecv
	kindPipeData
	kindWriteRows
	kindWritten
	kindLens
	kindLensReply
	kindInterrupt
	kindPosition
	kindLensHost
	kindPeers
	kindPeersReady
	kindPeerHello
	kindPeerData
	kindPeerWait
	kindPeerAbort
)

func kindName(k byte) string {
	names := []string{"?", "error", "hello", "assign", "loaded", "step", "want", "answer", "visit", "moments", "moments reply",
		"to-host", "values", "resume", "abort", "collective", "done", "memory", "memory reply", "quit",
		"pipe send", "pipe receive", "pipe data", "write rows", "written", "lens", "lens reply", "interrupt", "position", "lens of host rows",
		"peers", "peers ready", "peer hello", "peer data", "peer wait", "peer abort"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("kind %d", k)
}

// Collective operations a CPU worker asks of the front's hub.
const (
	opAllReduceSum  byte = 1
	opAllGatherCols byte = 2
)

// hello is a worker's first message: the protocol version, the session
// token, where it runs, and the rank it asks for (-1: any).
type hello struct {
	Version uint32
	Token   string
	Host    string
	PID     int
	Rank    int
}

func (h *hello) enc(e *enc) {
	e.u32(h.Version)
	e.str(h.Token)
	e.str(h.Host)
	e.int(h.PID)
	e.i64(int64(h.Rank))
}

func (h *hello) dec(d *dec) error {
	h.Version = d.u32()
	h.Token = d.str()
	h.Host = d.str()
	h.PID = d.int()
	h.Rank = int(d.i64())
	if d.err == nil && (h.Rank < -1 || h.Rank >= 1<<20) {
		d.fail("rank %d", h.Rank)
	}
	return d.err
}

// assign tells a worker its rank and what to load: the model path as the
// user gave it and the load options (engine.Options' plain fields). With
// pipeline stages, Slot is the worker's index over all stages (stage ×
// world + rank), Stage of Stages its stage and Layers the stage's decoder
// layers.
type assign struct {
	Rank, World   int
	Slot          int
	Stage, Stages int
	Model         string
	Device        string
	DType         tensor.DType
	EP            bool
	W8A8          bool   // engine.Options.W8A8
	Layers        string // model.LayerRange.String(), "" for all
	// ActDType is the activation dtype a CUDA worker computes in
	// (plan.ActivationDType of the front's config; the worker makes its
	// device before it reads the model).
	ActDType tensor.DType
	// Direct: the worker listens for its peers (peers.go) and reports
	// where; false (Config.Hub) opens no listener.
	Direct bool
}

func (a *assign) enc(e *enc) {
	e.int(a.Rank)
	e.int(a.World)
	e.int(a.Slot)
	e.int(a.Stage)
	e.int(a.Stages)
	e.str(a.Model)
	e.str(a.Device)
	e.u8(byte(a.DType))
	e.bool(a.EP)
	e.str(a.Layers)
	e.u8(byte(a.ActDType))
	e.bool(a.Direct)
	e.bool(a.W8A8)
}

func (a *assign) dec(d *dec) error {
	a.Rank, a.World = d.int(), d.int()
	a.Slot, a.Stage, a.Stages = d.int(), d.int(), d.int()
	a.Model, a.Device = d.str(), d.str()
	a.DType = tensor.DType(d.u8())
	a.EP = d.bool()
	a.Layers = d.str()
	a.ActDType = tensor.DType(d.u8())
	a.Direct = d.bool()
	a.W8A8 = d.bool()
	if d.err == nil && (a.World < 1 || a.Rank >= a.World || a.Stages < 1 || a.Stage >= a.Stages) {
		d.fail("rank %d of a world of %d, stage %d of %d", a.Rank, a.World, a.Stage, a.Stages)
	}
	return d.err
}

// options returns the engine options a worker loads its rank with.
func (a *assign) options() (engine.Options, error) {
	o := engine.Options{TP: a.World, Device: a.Device, DType: a.DType, EP: a.EP, W8A8: a.W8A8}
	if a.Layers != "" {
		lr, err := model.ParseLayerRange(a.Layers)
		if err != nil {
			return o, err
		}
		o.Layers = &lr
	}
	return o, nil
}

// loaded is a worker's answer to assign: its device, activation dtype,
// memory and what the load read.
type loaded struct {
	Device   string
	ActDType tensor.DType
	Memory   int64
	Report   model.LoadReport
	Sites    []string // the paths of the sites the worker's model has
	// PeerAddr is where the worker's peers link to it (HOST:PORT).
	PeerAddr string
}

func (l *loaded) enc(e *enc) {
	e.str(l.Device)
	e.u8(byte(l.ActDType))
	e.i64(l.Memory)
	e.strs(l.Report.Dequantized)
	e.str(l.Report.Format)
	e.strs(l.Report.Formats)
	e.strs(l.Report.Unused)
	e.i64(l.Report.Bytes)
	e.strs(l.Sites)
	e.str(l.PeerAddr)
}

func (l *loaded) dec(d *dec) error {
	l.Device = d.str()
	l.ActDType = tensor.DType(d.u8())
	l.Memory = d.i64()
	l.Report.Dequantized = d.strs()
	l.Report.Format = d.str()
	l.Report.Formats = d.strs()
	l.Report.Unused = d.strs()
	l.Report.Bytes = d.i64()
	l.Sites = d.strs()
	l.PeerAddr = d.str()
	return d.err
}

// encBatch and decBatch carry a step's batch.
func encBatch(e *enc, b *model.Batch) {
	e.i32s(b.IDs)
	e.i32s(b.Pos)
	e.ints(b.SeqLens)
	e.ints(b.Seqs)
	e.ints(b.Slots)
	e.int(b.Step)
	e.bool(b.AllLogits)
}

func decBatch(d *dec) *model.Batch {
	b := &model.Batch{IDs: d.i32s(), Pos: d.i32s(), SeqLens: d.ints(), Seqs: d.ints(), Slots: d.ints(), Step: d.int(), AllLogits: d.bool()}
	return b
}

// siteTensor describes one tensor of a visit: name, shape, dtype and
// sharding label; Host carries small host data (router choices) whole.
type siteTensor struct {
	Name     string
	Shape    []int
	DType    tensor.DType
	Shard    model.Sharding
	Host     *tensor.Tensor
	Writable bool
	SumOf    []string
	Attn     *model.AttnGeometry
}

// visit is a worker's arrival at a wanted site: the site's path, the
// step, the tensors and the call chain (site path and input shapes per
// frame). Sites go by path: a pipeline stage's model holds only its
// layers' sites.
type visit struct {
	Site    string
	Step    int
	Tensors []siteTensor
	Frames  []visitFrame
}

// visitFrame is one frame of a visit: its site, and its inputs' shapes
// and dtypes (the inputs are tensors of the visit too, numbered after the
// site's tensors, frame by frame).
type visitFrame struct {
	Site     string
	Inputs   [][]int
	InDTypes []tensor.DType
}

func (v *visit) enc(e *enc) {
	e.str(v.Site)
	e.int(v.Step)
	e.u32(uint32(len(v.Tensors)))
	for _, t := range v.Tensors {
		e.str(t.Name)
		e.ints(t.Shape)
		e.u8(byte(t.DType))
		e.u8(byte(t.Shard.Kind))
		e.int(t.Shard.Start)
		e.int(t.Shard.End)
		e.int(t.Shard.Full)
		e.bool(t.Host != nil)
		if t.Host != nil {
			e.tensor(t.Host)
		}
		e.bool(t.Writable)
		e.strs(t.SumOf)
		e.bool(t.Attn != nil)
		if a := t.Attn; a != nil {
			e.str(a.Key)
			for _, v := range []int{a.Heads, a.KVHeads, a.DK, a.FirstHead, a.FirstKVHead, a.TotalHeads, a.TotalKVHeads, a.Window} {
				e.int(v)
			}
			e.f64(float64(a.Scale))
		}
	}
	e.u32(uint32(len(v.Frames)))
	for _, f := range v.Frames {
		e.str(f.Site)
		e.u32(uint32(len(f.Inputs)))
		for i, in := range f.Inputs {
			e.ints(in)
			e.u8(byte(f.InDTypes[i]))
		}
	}
}

func (v *visit) dec(d *dec) error {
	v.Site, v.Step = d.str(), d.int()
	n := d.count(8)
	for range n {
		t := siteTensor{Name: d.str(), Shape: d.shape(), DType: tensor.DType(d.u8())}
		t.Shard = model.Sharding{Kind: model.ShardKind(d.u8()), Start: d.int(), End: d.int(), Full: d.int()}
		if d.bool() {
			t.Host = d.tensor()
		}
		t.Writable = d.bool()
		t.SumOf = d.strs()
		if d.bool() {
			a := &model.AttnGeometry{Key: d.str(), Heads: d.int(), KVHeads: d.int(), DK: d.int(), FirstHead: d.int(), FirstKVHead: d.int(),
				TotalHeads: d.int(), TotalKVHeads: d.int(), Window: d.int()}
			a.Scale = float32(d.f64())
			t.Attn = a
		}
		v.Tensors = append(v.Tensors, t)
	}
	n = d.count(8)
	for range n {
		f := visitFrame{Site: d.str()}
		m := d.count(4)
		for range m {
			f.Inputs = append(f.Inputs, d.shape())
			f.InDTypes = append(f.InDTypes, tensor.DType(d.u8()))
		}
		v.Frames = append(v.Frames, f)
	}
	return d.err
}

// region is rows [R0,R1) × columns [C0,C1) of visit tensor T.
type region struct{ T, R0, R1, C0, C1 int }

func (r region) enc(e *enc) { e.int(r.T); e.int(r.R0); e.int(r.R1); e.int(r.C0); e.int(r.C1) }
func (r *region) dec(d *dec) error {
	r.T, r.R0, r.R1, r.C0, r.C1 = d.int(), d.int(), d.int(), d.int(), d.int()
	return d.err
}

func encMoments(e *enc, m tensor.Moments) {
	e.i64(m.Count)
	e.i64(m.NaN)
	e.i64(m.Inf)
	e.i64(m.Zeros)
	for _, f := range []float64{m.Sum, m.SumSq, m.Min, m.Max, m.AbsMax} {
		e.f64(f)
	}
}

func decMoments(d *dec) tensor.Moments {
	return tensor.Moments{Count: d.i64(), NaN: d.i64(), Inf: d.i64(), Zeros: d.i64(), Sum: d.f64(), SumSq: d.f64(), Min: d.f64(), Max: d.f64(), AbsMax: d.f64()}
}

// done ends a step: the logits when asked for, or the worker's error
// (Aborted: it was an abort caused elsewhere).
type done struct {
	Err     string
	Aborted bool
	Logits  *tensor.Tensor
}

func (m *done) enc(e *enc) {
	e.str(m.Err)
	e.bool(m.Aborted)
	e.bool(m.Logits != nil)
	if m.Logits != nil {
		e.tensor(m.Logits)
	}
}

func (m *done) dec(d *dec) error {
	m.Err, m.Aborted = d.str(), d.bool()
	if d.bool() {
		m.Logits = d.tensor()
	}
	return d.err
}

// encFaults writes the faults injected into a step (`inject`), so that a
// worker's building blocks act on them as the in-process ranks do.
func encFaults(e *enc, fs model.Faults) {
	e.u32(uint32(len(fs)))
	for _, f := range fs {
		e.str(f.Kind)
		e.str(f.Site)
		e.i64(int64(f.Rank)) // -1: every rank
		e.f64(f.Value)
		e.i64(int64(f.Token))
		e.i64(int64(f.Channel))
	}
}

// decFaults reads what encFaults wrote; the count is bounded by the bytes
// left in the message.
func decFaults(d *dec) model.Faults {
	n := d.count(4 + 4 + 8 + 8 + 8 + 8)
	if n == 0 {
		return nil
	}
	fs := make(model.Faults, n)
	for i := range fs {
		fs[i] = model.Fault{Kind: d.str(), Site: d.str(), Rank: int(d.i64()), Value: d.f64(), Token: int(d.i64()), Channel: int(d.i64())}
	}
	return fs
}
