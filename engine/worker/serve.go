package worker

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"hsdb/engine"
	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// TokenEnv is the environment variable a worker reads its session token
// from when --token is not given (the front passes it so to the workers it
// starts, keeping it out of the process list).
const TokenEnv = "HSDB_WORKER_TOKEN"

// WorkerConfig is how `hsdb worker` joins a session: the front's address,
// the session's token, the rank asked for (-1: the next free one), and
// the dial timeout.
type WorkerConfig struct {
	Connect string
	Token   string
	Rank    int
	Dial    time.Duration
	// Log receives the worker's notes (its rank once assigned); nil drops
	// them.
	Log io.Writer
}

// server is one worker process's side of the session.
type server struct {
	c    *conn
	e    *engine.Engine
	dev  backend.Device
	rank int
	view *model.RankView // the open visit's view, nil outside a visit
	// flat are the open visit's tensors as the front numbers them: the
	// site's (nil for host data), then each frame's inputs in order.
	flat  []backend.Tensor
	names []string
	front string
	// broken is set when the connection broke inside a step (the step is
	// then unwound by a panic and the worker ends).
	broken   error
	closeDev func() error // releases a CUDA device's memory, or nil
	// in carries the front's messages from the reader goroutine (read),
	// which answers interrupts itself; gate says which sites a step asks
	// the front about.
	in   chan frame
	gate gate
	// peers are the direct links to other workers; token and world and
	// stages are what linking them needs.
	peers         *peers
	token         string
	world, stages int
}

// newCUDADevice makes a CUDA worker's device; set by the cuda build
// (device_cuda.go), nil otherwise.
var newCUDADevice func(a *assign) (backend.Device, error)

// Serve runs a worker: it connects to the front, presents the token, loads
// the rank it is assigned and serves the front's steps until the front
// quits (nil) or the connection ends (an error). A refused hello (wrong
// token, wrong version, no free rank) is an error with the front's reason.
//
// A worker a front started (Spawned) ignores SIGINT: the terminal's Ctrl-C
// reaches the whole process group, and the front turns it into a stop at
// the next site.
func Serve(cfg WorkerConfig) error {
	if Spawned() {
		signal.Ignore(os.Interrupt)
	}
	dial := cfg.Dial
	if dial == 0 {
		dial = 30 * time.Second
	}
	nc, err := dialFront(cfg.Connect, dial)
	if err != nil {
		return fmt.Errorf("worker: --connect %s: %w", cfg.Connect, err)
	}
	c := newConn(nc)
	defer c.close()
	host, _ := os.Hostname()
	h := hello{Version: Version, Token: cfg.Token, Host: host, PID: os.Getpid(), Rank: cfg.Rank}
	var e enc
	h.enc(&e)
	if err := c.send(kindHello, &e); err != nil {
		return fmt.Errorf("worker: %s: %w", cfg.Connect, err)
	}
	d, err := c.expect(kindAssign, dial)
	if err != nil {
		return fmt.Errorf("worker: %s refused this worker: %w", cfg.Connect, err)
	}
	var a assign
	if err := a.dec(d); err != nil {
		return fmt.Errorf("worker: %s: %w", cfg.Connect, err)
	}
	c.limit = maxFrame
	if cfg.Log != nil {
		stage := "" // two stages' workers share rank numbers: say whose
		if a.Stages > 1 {
			stage = fmt.Sprintf(", stage %d of %d (decoder layers %s)", a.Stage, a.Stages, a.Layers)
		}
		fmt.Fprintf(cfg.Log, "hsdb worker %d: rank %d of %d%s, loading %s\n", os.Getpid(), a.Rank, a.World, stage, orDefault(a.Model))
	}
	s := &server{c: c, rank: a.Rank, front: cfg.Connect, token: cfg.Token, world: a.World, stages: a.Stages}
	if a.Direct {
		if s.peers, err = listenPeers(nc); err != nil {
			return err
		}
		defer s.peers.close()
		s.peers.slot, s.peers.world = a.Slot, a.World
		go s.acceptPeers(cfg.Token)
	}
	if err := s.load(&a); err != nil {
		var e enc
		e.str(err.Error())
		c.send(kindError, &e)
		return err
	}
	return s.serve()
}

func orDefault(path string) string {
	if path == "" {
		return engine.DefaultModelPath
	}
	return path
}

// load opens the model with only the assigned rank, on this process's
// device, and reports it to the front.
func (s *server) load(a *assign) error {
	opts, err := a.options()
	if err != nil {
		return err
	}
	switch a.Device {
	case "", "cpu":
		name := -1
		if a.World*a.Stages > 1 {
			name = a.Slot
		}
		s.dev = cpu.New(name)
	case "cuda":
		if newCUDADevice == nil {
			return fmt.Errorf("%w: --device cuda: this worker was built without CUDA support (build hsdb with -tags cuda, or give --worker-bin a cuda build)", engine.ErrDevice)
		}
		if s.dev, err = newCUDADevice(a); err != nil {
			return err
		}
		if c, ok := s.dev.(io.Closer); ok {
			s.closeDev = c.Close
		}
	default:
		return fmt.Errorf("%w: --device %q: want cpu or cuda", engine.ErrDevice, a.Device)
	}
	opts.Worker = &engine.WorkerRank{Rank: a.Rank, Dev: s.dev, Comm: &wireComm{s: s, world: a.World}}
	if a.Stages > 1 {
		if opts.Layers == nil {
			return fmt.Errorf("worker rank %d: stage %d of %d without its layers", a.Rank, a.Stage, a.Stages)
		}
		opts.Worker.Pipe = &wirePipe{s: s, stage: a.Stage, stages: a.Stages}
	}
	s.e, err = engine.Open(a.Model, opts)
	if err != nil {
		return err
	}
	l := loaded{Device: s.dev.Name(), ActDType: s.dev.ActDType(), Memory: s.dev.MemoryInUse(), Report: s.e.Report}
	if s.peers != nil {
		l.PeerAddr = s.peers.ln.Addr().String()
	}
	for _, st := range s.e.Tree.Sites {
		l.Sites = append(l.Sites, st.Path)
	}
	var e enc
	l.enc(&e)
	return s.c.send(kindLoaded, &e)
}

// serve answers the front between steps: a step runs, memory is reported,
// quit ends the worker.
func (s *server) serve() error {
	s.in = make(chan frame, 1)
	go s.read()
	for {
		k, d, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("worker rank %d: the front %s closed the session", s.rank, s.front)
			}
			return fmt.Errorf("worker rank %d: %w", s.rank, err)
		}
		switch k {
		case kindStep:
			if err := s.step(d); err != nil {
				return err
			}
		case kindMemory:
			if err := s.memory(); err != nil {
				return err
			}
		case kindLensHost: // an earlier pipeline stage is stopped: this one holds the head
			var e enc
			rk := s.lensHost(d, &e)
			if err := s.c.send(rk, &e); err != nil {
				return err
			}
		case kindPeers:
			rk, e := kindPeersReady, enc{}
			if s.peers == nil {
				return fmt.Errorf("worker rank %d: protocol: a peer list for a worker assigned without direct links", s.rank)
			}
			if err := s.linkPeers(d, s.token, s.world, s.stages); err != nil {
				rk = kindError
				e.str(err.Error())
			}
			if err := s.c.send(rk, &e); err != nil {
				return err
			}
		case kindQuit:
			if s.closeDev != nil {
				s.closeDev()
			}
			return nil
		default:
			return fmt.Errorf("worker rank %d: protocol: a %s message between steps", s.rank, kindName(k))
		}
	}
}

func (s *server) memory() error {
	var e enc
	e.i64(s.dev.MemoryInUse())
	e.i64(s.e.CacheBytes()[0])
	return s.c.send(kindMemoryReply, &e)
}

// step runs one forward step the front sent and reports its end.
func (s *server) step(d *dec) error {
	b := decBatch(d)
	hooked := d.bool()
	logits := d.bool()
	faults := decFaults(d)
	seq := uint64(d.i64())
	epoch, want := decFilter(d)
	if d.err != nil {
		return fmt.Errorf("worker rank %d: %w", s.rank, d.err)
	}
	if want != nil && len(want) != len(s.e.Tree.Sites) {
		return fmt.Errorf("worker rank %d: protocol: a site filter of %d sites for a model of %d", s.rank, len(want), len(s.e.Tree.Sites))
	}
	s.gate.begin(b.Step, epoch, want)
	if s.peers != nil {
		s.peers.begin(seq)
	}
	var h model.Hook
	if hooked {
		h = wireHook{s}
	}
	if site := s.kernelFaultSite(); site != "" {
		h = &kernelFault{inner: h, site: site, dev: s.dev}
	}
	s.e.Faults = faults // injected faults act on this rank as in process
	t0 := time.Now()
	out, runErr := s.e.RunStep(b, h, logits)
	s.gate.end()
	if s.broken != nil {
		return s.broken
	}
	s.endIfContextLost(runErr)
	t1 := time.Now()
	defer func() {
		trace("worker rank %d: step %.3f ms, reply %.3f ms", s.rank, ms(t1.Sub(t0)), ms(time.Since(t1)))
	}()
	m := done{Logits: out}
	if runErr != nil {
		m.Err, m.Aborted = runErr.Error(), errors.Is(runErr, backend.ErrAborted)
		m.Logits = nil
	}
	var e enc
	m.enc(&e)
	return s.c.send(kindDone, &e)
}

// call sends a request of a step and reads the front's answer.
func (s *server) call(kind byte, e *enc) (byte, *dec) {
	if err := s.c.send(kind, e); err != nil {
		s.fail(err)
	}
	k, d, err := s.next()
	if err != nil {
		s.fail(err)
	}
	return k, d
}

// fail records that the connection broke or the front broke the protocol
// and unwinds the step (RunStep reports the panic; serve then ends the
// worker with err).
func (s *server) fail(err error) {
	s.broken = fmt.Errorf("worker rank %d: %w", s.rank, err)
	panic(s.broken)
}

// wireHook is a worker's model.Hook: Want asks the front's hook at the
// sites the front's filter names (every site after an interrupt), Visit
// opens a visit and serves the front's queries until it resumes or aborts
// the step.
type wireHook struct{ s *server }

func (h wireHook) Want(ev *model.Event) bool {
	if !h.s.gate.ask(ev.Site) {
		return false // a site the front's hook cannot want: no round trip
	}
	var e enc
	e.str(ev.Site.Path)
	e.int(ev.Step)
	k, d := h.s.call(kindWant, &e)
	if k != kindAnswer {
		h.s.fail(fmt.Errorf("protocol: a %s message where an answer was expected", kindName(k)))
		return false
	}
	return d.bool()
}

func (h wireHook) Visit(ev *model.Event, views []*model.RankView) error {
	s := h.s
	v := views[0]
	msg := visit{Site: ev.Site.Path, Step: ev.Step}
	s.flat, s.names = s.flat[:0], s.names[:0]
	for _, t := range v.Tensors {
		s.flat, s.names = append(s.flat, t.T), append(s.names, t.Name)
		st := siteTensor{Name: t.Name, Shape: t.Shape(), Shard: t.Shard, Host: t.Host, Writable: t.Writable, SumOf: t.SumOf, Attn: t.Attn}
		if t.T != nil {
			st.DType = t.T.DType()
		} else {
			st.DType = t.Host.DType
		}
		msg.Tensors = append(msg.Tensors, st)
	}
	for _, f := range v.Frames {
		vf := visitFrame{Site: f.Site.Path, Inputs: f.Inputs}
		for i, in := range f.In {
			vf.InDTypes = append(vf.InDTypes, in.DType())
			s.flat, s.names = append(s.flat, in), append(s.names, fmt.Sprintf("input %d of %s", i, f.Site.Path))
		}
		for len(vf.InDTypes) < len(vf.Inputs) { // a frame without its tensors (none today)
			vf.InDTypes = append(vf.InDTypes, tensor.Invalid)
		}
		msg.Frames = append(msg.Frames, vf)
	}
	var e enc
	msg.enc(&e)
	s.view = v
	defer func() { s.view = nil }()
	k, d := s.call(kindVisit, &e)
	for {
		switch k {
		case kindResume:
			ep, want := decFilter(d)
			if d.err != nil || (want != nil && len(want) != len(s.e.Tree.Sites)) {
				s.fail(fmt.Errorf("protocol: a bad resume (%v, a filter of %d sites)", d.err, len(want)))
			}
			s.gate.set(ep, want)
			return nil
		case kindAbort:
			return errors.New(d.str())
		case kindMoments, kindToHost:
			var e enc
			rk := s.query(k, d, &e)
			k, d = s.call(rk, &e)
		case kindWriteRows:
			var e enc
			rk := s.writeRows(d, &e)
			k, d = s.call(rk, &e)
		case kindLens:
			var e enc
			rk := s.lens(d, &e)
			k, d = s.call(rk, &e)
		case kindMemory:
			var e enc
			e.i64(s.dev.MemoryInUse())
			e.i64(s.e.CacheBytes()[0])
			k, d = s.call(kindMemoryReply, &e)
		default:
			s.fail(fmt.Errorf("protocol: a %s message during a visit", kindName(k)))
		}
	}
}

// query answers a moments or to-host request on the open visit's tensors,
// into e; it returns the reply's kind (kindError for a bad request or a
// failed device op, which the front reports).
func (s *server) query(k byte, d *dec, e *enc) (reply byte) {
	var r region
	if err := r.dec(d); err != nil {
		e.str(err.Error())
		return kindError
	}
	if r.T >= len(s.flat) || s.flat[r.T] == nil {
		e.str(fmt.Sprintf("worker rank %d: no device tensor %d at this site", s.rank, r.T))
		return kindError
	}
	t := s.flat[r.T]
	rows, cols := rowsCols(t.Shape())
	if r.R0 > r.R1 || r.R1 > rows || r.C0 > r.C1 || r.C1 > cols {
		e.str(fmt.Sprintf("worker rank %d: region rows %d:%d, columns %d:%d outside %s [%d, %d]", s.rank, r.R0, r.R1, r.C0, r.C1, s.names[r.T], rows, cols))
		return kindError
	}
	defer s.deviceErrorReply(e, &reply)
	if k == kindMoments {
		encMoments(e, s.dev.Moments(t, r.R0, r.R1, r.C0, r.C1))
		return kindMomentsReply
	}
	h := s.dev.ToHost(t, r.R0, r.R1, r.C0, r.C1)
	e.tensor(h)
	return kindValues
}

// deviceErrorReply, deferred by a request's handler, turns a
// *backend.DeviceError panic of a device op into the reply kindError with
// the error (replacing what was encoded so far); any other panic goes on.
func (s *server) deviceErrorReply(e *enc, reply *byte) {
	if p := recover(); p != nil {
		var de *backend.DeviceError
		if err, ok := p.(error); ok && errors.As(err, &de) {
			e.reset()
			e.str(fmt.Sprintf("worker rank %d: %v", s.rank, de))
			*reply = kindError
			return
		}
		panic(p)
	}
}

// rowsCols reads shape sh as a matrix: [rows, product of the rest]
// ([1, 1] for a scalar).
func rowsCols(sh []int) (rows, cols int) {
	if len(sh) == 0 {
		return 1, 1
	}
	return sh[0], tensor.Numel(sh[1:])
}

// checkToken compares tokens in constant time.
func checkToken(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// writeRows writes rows into a tensor of the open visit (a debugger edit:
// `set var`, `patch`): tensor index, first row and the rows in the
// tensor's dtype; it replies kindWritten, or kindError for a bad request
// or a failed device op.
func (s *server) writeRows(d *dec, e *enc) (reply byte) {
	idx, row := d.int(), d.int()
	data := d.tensor()
	if d.err != nil {
		e.str(d.err.Error())
		return kindError
	}
	if idx >= len(s.flat) || s.flat[idx] == nil {
		e.str(fmt.Sprintf("worker rank %d: no device tensor %d at this site", s.rank, idx))
		return kindError
	}
	t := s.flat[idx]
	rows, cols := rowsCols(t.Shape())
	if data.DType != t.DType() || data.Cols() != cols || row+data.Rows() > rows {
		e.str(fmt.Sprintf("worker rank %d: rows %d:%d of %s %v into %s (%s) [%d, %d]", s.rank, row, row+data.Rows(), data.DType, data.Shape, s.names[idx], t.DType(), rows, cols))
		return kindError
	}
	defer s.deviceErrorReply(e, &reply)
	up := s.dev.Upload(data)
	s.dev.CopyRows(t, row, up, 0, data.Rows())
	s.dev.Free(up)
	return kindWritten
}
