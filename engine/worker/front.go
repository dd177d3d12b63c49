package worker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/plan"
	"hsdb/engine/tensor"
)

// Config is how a front runs its rank workers.
type Config struct {
	// Listen is the address workers join at; "" means loopback on any
	// free port (127.0.0.1:0). A non-loopback address accepts workers of
	// other hosts, which must present the session's token.
	Listen string
	// Spawn starts the world's workers as child processes of this host
	// (Command); false waits for them to join (`hsdb worker --connect
	// ADDR --token T`, started by a launcher: ssh, srun, a Kubernetes
	// job).
	Spawn bool
	// Command is a spawned worker's program and leading arguments;
	// empty means this executable with "worker" (the `hsdb worker`
	// subcommand). --connect, --rank and the token (in TokenEnv) are
	// added.
	Command []string
	// Token is the session token workers must present; "" makes a random
	// one (printed to Log when not spawning).
	Token string
	// Timeout bounds every wait on a worker but its load: a step message
	// (a worker computing or stuck in a collective longer than this is
	// declared hung and killed) and joining. 0 means 10 minutes.
	Timeout time.Duration
	// JoinTimeout bounds the wait for the workers to join; 0 means
	// Timeout (a short one, to find hung steps, need not bound start-up).
	JoinTimeout time.Duration
	// LoadTimeout bounds the wait for a worker to load its rank; 0 waits
	// until it answers or its connection ends (a large checkpoint on a
	// cold disk can take longer than any step).
	LoadTimeout time.Duration
	// Log receives the front's notes (the address and token to give
	// launchers, refused workers) and spawned workers' stderr, each line
	// prefixed with its rank; nil drops them.
	Log io.Writer
	// PP is the number of pipeline stages (--pp; 0 means 1): the decoder
	// layers are split into PP consecutive stages as vLLM's
	// get_pp_indices splits them, each stage a tensor-parallel group of
	// its own workers (PP × TP workers; worker slot = stage × TP + rank).
	// hidden_states and residual pass from a stage's rank r to the next
	// stage's rank r over a direct link (through the front with Hub).
	PP int
	// Hub sends the workers' collectives and stage transfers through the
	// front (a star: every tensor crosses it twice) instead of over
	// direct links between the workers (peers.go): for hosts whose
	// workers cannot reach each other, only the front.
	Hub bool

	onListen func(addr string) // tests: called with the address once listening
	askAll   bool              // tests and benchmarks: ask the front at every site (no site filter)
}

// Front runs a world's ranks in worker processes: engine.Workers for the
// front's engine (pass it in engine.Options.Workers).
type Front struct {
	cfg    Config
	ln     net.Listener
	token  string
	tmpl   assign
	world  int                // tensor-parallel ranks per stage
	pp     int                // pipeline stages
	stages []model.LayerRange // each stage's decoder layers (pp > 1)
	joins  chan *joined
	hub    *hub
	sites  map[string]*model.Site
	tree   []*model.Site // the front's sites in visit order (Bind)
	// pipes[s][r] holds stage s-1's output for rank r of stage s during a
	// step.
	pipes [][]chan [2]*tensor.Tensor

	mu    sync.Mutex
	slots []*remoteRank // pp × world workers, slot = stage × world + rank
	// replaced holds a line per worker Begin replaced, until Replaced.
	replaced []string
	log      sync.Mutex

	intr interrupts
	// wants counts the want messages workers sent (tests: a site nobody
	// watches must cost none).
	wants atomic.Int64
	// seq numbers the steps (Begin): the workers' peer frames and aborts
	// carry it. gen numbers the generations of direct links (link).
	seq atomic.Uint64
	gen int
	// relink is set when a step was aborted (a link may have broken with
	// it) or linking failed: the next step links the workers anew.
	relink atomic.Bool
	// hubbed counts the tensors the workers sent through the front
	// (collectives and stage transfers): none with direct links.
	hubbed atomic.Int64
}

var _ engine.Workers = (*Front)(nil)

// joined is a worker that presented the right token and version.
type joined struct {
	c *conn
	h hello
}

// Start listens, starts or waits for one worker per rank of opts.TP, has
// each load its rank of the model at path (the path as the user gave it:
// workers on other hosts resolve it themselves) and returns when all are
// loaded. Errors: the listener, a worker that exits or fails to load
// (naming its rank and why), the timeout.
func Start(path string, opts engine.Options, cfg Config) (*Front, error) {
	world := max(opts.TP, 1)
	if err := checkSplit(path, world); err != nil {
		return nil, err // before any worker is spawned: --tp 4096 would start 4096 processes only to fail
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	addr := cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	pp := max(cfg.PP, 1)
	f := &Front{cfg: cfg, ln: ln, token: cfg.Token, world: world, pp: pp, joins: make(chan *joined), hub: newHub(world),
		slots: make([]*remoteRank, pp*world)}
	if pp > 1 {
		d, err := modelpath.ConfigDims(path)
		if err != nil {
			ln.Close()
			return nil, err
		}
		if err := model.CheckStages(d.Layers, pp, opts.Layers); err != nil { // --load-layers beside --pp: the stages' own ranges
			ln.Close()
			return nil, err
		}
		if f.stages, err = StageLayers(d.Layers, pp); err != nil {
			ln.Close()
			return nil, err
		}
		f.pipes = make([][]chan [2]*tensor.Tensor, pp)
		for s := range f.pipes {
			f.pipes[s] = make([]chan [2]*tensor.Tensor, world)
			for r := range f.pipes[s] {
				f.pipes[s][r] = make(chan [2]*tensor.Tensor, 1)
			}
		}
	}
	if f.token == "" {
		var b [16]byte
		rand.Read(b[:])
		f.token = hex.EncodeToString(b[:])
	}
	f.tmpl = assign{World: world, Stages: pp, Model: absModel(path), Device: opts.Device, DType: opts.DType, EP: opts.EP, W8A8: opts.W8A8, Direct: !cfg.Hub}
	if opts.Device == "cuda" {
		d, err := modelpath.ConfigDims(path)
		if err != nil {
			ln.Close()
			return nil, err
		}
		f.tmpl.ActDType = plan.ActivationDType(opts.DType, d)
	}
	if opts.Layers != nil {
		f.tmpl.Layers = opts.Layers.String()
	}
	go f.accept()
	if cfg.onListen != nil {
		cfg.onListen(ln.Addr().String())
	}
	if !cfg.Spawn {
		f.note("hsdb: waiting for %d worker(s): hsdb worker --connect %s --token %s", pp*world, f.Addr(), f.token)
	}
	all := make([]int, pp*world)
	for r := range all {
		all[r] = r
	}
	if err := f.start(all); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.link(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Token returns the session token.
func (f *Front) Token() string { return f.token }

// PID returns the process id of the worker in slot (stage × TP + rank),
// as it reported it.
func (f *Front) PID(slot int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.slots[slot].pid
}

func (f *Front) note(format string, args ...any) {
	if f.cfg.Log == nil {
		return
	}
	f.log.Lock()
	defer f.log.Unlock()
	fmt.Fprintf(f.cfg.Log, format+"\n", args...)
}

// accept greets every connection: a hello with the right version and
// token joins; anything else is refused with the reason and closed.
func (f *Front) accept() {
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.greet(nc)
	}
}

func (f *Front) greet(nc net.Conn) {
	c := newConn(nc)
	k, d, err := c.recv(30 * time.Second)
	if err != nil || k != kindHello {
		f.note("hsdb: refused a connection from %s: no worker hello", nc.RemoteAddr())
		c.close()
		return
	}
	var h hello
	if err := h.dec(d); err != nil {
		f.refuse(c, fmt.Sprintf("a malformed hello (%v)", err))
		return
	}
	if h.Version != Version {
		f.refuse(c, fmt.Sprintf("worker protocol version %d, this front speaks %d (install the same hsdb on every host)", h.Version, Version))
		return
	}
	if !checkToken(h.Token, f.token) {
		f.note("hsdb: refused a worker from %s (pid %d on %s): wrong token", nc.RemoteAddr(), h.PID, h.Host)
		f.refuse(c, "wrong token")
		return
	}
	if n := len(f.slots); h.Rank >= n {
		// no slot will ever wait for it: refused now, not after the timeout
		why := f.noSuchSlot(h.Rank)
		f.note("hsdb: refused a worker from %s (pid %d on %s): %s", nc.RemoteAddr(), h.PID, h.Host, why)
		f.refuse(c, why)
		return
	}
	select {
	case f.joins <- &joined{c: c, h: h}:
	case <-time.After(f.cfg.Timeout):
		f.refuse(c, fmt.Sprintf("no slot of this session waited for a worker within --worker-timeout %s", f.cfg.Timeout))
	}
}

// noSuchSlot says that slot is not one of the session's (a worker's
// --rank is a slot: stage × --tp + rank).
func (f *Front) noSuchSlot(slot int) string {
	return fmt.Sprintf("slot %d does not exist: this session has slots 0-%d (stage × --tp + rank: --tp %d, --pp %d)", slot, len(f.slots)-1, f.world, f.pp)
}

func (f *Front) refuse(c *conn, why string) {
	var e enc
	e.str(why)
	c.send(kindError, &e)
	c.close()
}

// start brings up workers for ranks need (spawning them when Spawn) and
// waits until each has loaded its rank.
func (f *Front) start(need []int) error {
	procs := map[int]*process{}
	if f.cfg.Spawn {
		for _, r := range need {
			p, err := f.spawn(r)
			if err != nil {
				endStarted(procs, nil) // the ranks started before this one
				return err
			}
			procs[r] = p
		}
	}
	waiting := map[int]bool{}
	for _, r := range need {
		waiting[r] = true
	}
	type result struct {
		r   *remoteRank
		err error
	}
	results := make(chan result, len(need))
	joinWait := f.cfg.Timeout
	if f.cfg.JoinTimeout > 0 {
		joinWait = f.cfg.JoinTimeout
	}
	deadline := time.After(joinWait)
	var joined []*remoteRank
	for assigned := 0; assigned < len(need); {
		var exited <-chan struct{}
		var exitRank int
		for _, r := range need { // the first spawned worker still waiting, should it die before joining (in slot order: the report names the same one every time)
			if p := procs[r]; p != nil && waiting[r] {
				exited, exitRank = p.exited, r
				break
			}
		}
		select {
		case j := <-f.joins:
			r := j.h.Rank
			if r < 0 {
				for _, n := range need {
					if waiting[n] {
						r = n
						break
					}
				}
			}
			if r < 0 || !waiting[r] {
				why := fmt.Sprintf("slot %d already has a worker", j.h.Rank)
				f.note("hsdb: refused a worker (pid %d on %s): %s", j.h.PID, j.h.Host, why)
				f.refuse(j.c, why)
				continue
			}
			waiting[r] = false
			assigned++
			rr := &remoteRank{f: f, slot: r, rank: r % f.world, stage: r / f.world, c: j.c, host: j.h.Host, pid: j.h.PID, proc: procs[r]}
			joined = append(joined, rr)
			go func() {
				err := rr.load(f.tmpl)
				results <- result{rr, err}
			}()
		case <-exited:
			p := procs[exitRank]
			endStarted(procs, joined)
			return fmt.Errorf("rank %d: the worker exited before joining (%v)%s", exitRank, p.err, p.stderr.suffix())
		case <-deadline:
			endStarted(procs, joined)
			return fmt.Errorf("%w: %d worker(s) did not join %s within %s", engine.ErrWorker, len(need)-assigned, f.Addr(), joinWait)
		}
	}
	var first error
	for range need {
		res := <-results
		if res.err != nil {
			res.r.kill()
			if first == nil {
				first = res.err
			}
			continue
		}
		f.mu.Lock()
		f.slots[res.r.slot] = res.r
		f.mu.Unlock()
	}
	return first
}

// Ranks returns the world's ranks: each drives its workers of every
// stage in turn.
func (f *Front) Ranks() []engine.RemoteRank {
	out := make([]engine.RemoteRank, f.world)
	for r := range out {
		out[r] = chain{f: f, rank: r}
	}
	return out
}

// slot returns the worker in slot i.
func (f *Front) slot(i int) *remoteRank {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.slots[i]
}

// Bind gives the front the module tree whose sites the workers' messages
// name by path; every site of every worker's model must be one of them,
// else an error naming the worker (rank, pid, host) and the site the
// front's model lacks.
func (f *Front) Bind(t *model.Tree) error {
	f.sites = map[string]*model.Site{}
	for _, s := range t.Sites {
		f.sites[s.Path] = s
	}
	f.tree = t.Sites
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.slots {
		if err := r.checkSites(); err != nil {
			return err
		}
	}
	return nil
}

// Begin readies the workers for a step: a prefill first starts fresh
// workers in place of dead ones, saying so in the log (which rank, and
// its fault: why it was ended); a decode step with a dead worker fails.
func (f *Front) Begin(prefill bool) error {
	var dead []int
	var why error
	var lines []string
	f.mu.Lock()
	slots := append([]*remoteRank(nil), f.slots...)
	f.mu.Unlock()
	for _, r := range slots {
		r.exitedFault() // a spawned worker that died between steps
		if r.proc != nil && r.failed() == nil && procStopped(r.proc.cmd.Process.Pid) {
			r.fault(stoppedWorker{}) // it could not run the step: the step would wait out the timeout
		}
		if err := r.failed(); err != nil {
			dead = append(dead, r.slot)
			why = err
			if prefill {
				// a joined worker ran elsewhere: the front can only wait for
				// a worker to join in its place, and says how
				next, by := "starting a fresh one", "a fresh one"
				if !f.cfg.Spawn {
					next = fmt.Sprintf("waiting for a worker to join as slot %d: hsdb worker --connect %s --token %s --rank %d", r.slot, f.Addr(), f.token, r.slot)
					by = "a worker that joined"
				}
				f.note("hsdb: %s's worker was ended: %v; %s", r.who(), err, next)
				lines = append(lines, fmt.Sprintf("%s's worker was replaced by %s when this pass began; it was ended: %v", r.who(), by, err))
			}
		}
	}
	if len(dead) > 0 {
		if !prefill {
			return fmt.Errorf("%w; its KV cache went with it: `run` starts a fresh worker and a new prefill", why)
		}
		if err := f.start(dead); err != nil {
			return err
		}
		if f.sites != nil {
			for _, i := range dead {
				if err := f.slot(i).checkSites(); err != nil {
					return err
				}
			}
		}
		f.relink.Store(true)
		f.mu.Lock()
		f.replaced = append(f.replaced, lines...)
		f.mu.Unlock()
	}
	if f.relink.Swap(false) {
		if err := f.link(); err != nil {
			f.relink.Store(true)
			return err
		}
	}
	f.seq.Add(1)
	for _, st := range f.pipes {
		for _, ch := range st {
			select {
			case <-ch:
			default:
			}
		}
	}
	f.hub.g.Reset()
	return nil
}

// Abort wakes the ranks waiting in a collective of the current step, in
// the hub or for a peer.
func (f *Front) Abort(cause error) {
	f.hub.g.Abort(cause)
	f.abortPeers()
	f.relink.Store(true)
}

// Close stops every worker (quit, then a kill after 5 s) and the listener.
func (f *Front) Close() error {
	f.ln.Close()
	f.mu.Lock()
	ranks := append([]*remoteRank(nil), f.slots...)
	f.mu.Unlock()
	for _, r := range ranks {
		if r != nil {
			r.quit()
		}
	}
	return nil
}
