package capture

import (
	"fmt"
	"sync"
	"sync/atomic"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Asynchronous captures (a batch job on a device that is a
// model.AsyncHoster, the CUDA backend): a replicated tensor a capture
// records is not copied to the host while the pass waits (ToHostRaw: a
// synchronous copy into pageable memory, then the pass resumes); its
// copy is queued on the rank's stream into pinned host memory and the
// pass goes on at once, the DMA engine copying while the next layers
// run. Each batch's copies land in one Arena of a small pool of pinned
// buffers allocated once; the batch's sequences hold views of it until
// their files are written, when the arena goes back to the pool. The
// pattern is the device-to-host half of vLLM's CPU KV offloading
// (vllm/v1/kv_offload/worker/cpu_gpu.py: pinned CPU tensors reused block
// by block, copies completed by CUDA events); unlike vLLM's side stream,
// the copy is queued on the rank's own stream, so it is ordered after the
// kernel that produced the tensor and before any later reuse of its device
// memory without a cross-stream wait.

// pinState is a Capturer's asynchronous mode (UsePinned).
type pinState struct {
	batchTokens int
	pool        *pinnedPool
	cur         *Arena            // the arena of the pass now running
	events      []model.CopyEvent // copies queued in the pass now running
	dev         model.AsyncHoster // the device the pool's buffers belong to
}

// UsePinned switches the capturer to asynchronous copies into pinned host
// memory wherever the device allows (model.AsyncHoster; elsewhere, and for
// sharded or partial tensors, decode steps and recording faults, it copies
// as before): at most arenas buffers, each sized for a pass of
// batchTokens tokens with every capture of the same width (a bigger pass
// copies what does not fit synchronously). Only a batch job, which takes
// each pass's data with TakeBatch and releases it, uses it; call
// ReleasePinned when done.
func (c *Capturer) UsePinned(arenas, batchTokens int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pin = &pinState{batchTokens: max(batchTokens, 1), pool: &pinnedPool{max: max(arenas, 1)}}
	c.pin.pool.cond = sync.NewCond(&c.pin.pool.mu)
}

// ReleasePinned waits for every queued copy, forgets the data held and
// frees the pinned buffers; the capturer copies synchronously again. The
// caller must hold no Arena any more (a batch job calls it once its
// writers are done). Returns the first error of a wait or a free.
func (c *Capturer) ReleasePinned() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pin == nil {
		return nil
	}
	err := c.waitCopies()
	c.resetLocked()
	if c.pin.cur != nil {
		c.pin.cur.Done()
	}
	if ferr := c.pin.pool.close(); err == nil {
		err = ferr
	}
	c.pin = nil
	return err
}

// waitCopies waits for the queued copies of the pass (c.mu held).
func (c *Capturer) waitCopies() error {
	if c.pin == nil {
		return nil
	}
	var first error
	for _, ev := range c.pin.events {
		if err := ev.Wait(); err != nil && first == nil {
			first = fmt.Errorf("%w: copying a captured tensor to the host: %w", ErrCapture, err)
		}
	}
	c.pin.events = c.pin.events[:0]
	return first
}

// TakeBatch is Take for a batch job in asynchronous mode: it waits for the
// pass's copies and also returns the Arena its tensors live in (nil when
// nothing was copied asynchronously). The caller owns one reference to
// the arena: it Adds one per goroutine that reads the tensors and calls
// Done once for its own, each reader Done when finished; the last Done
// gives the memory back for a later pass, so nothing may read the
// tensors after it.
func (c *Capturer) TakeBatch() ([]*SeqCapture, map[string]ReplicaRecord, *Arena, error) {
	c.mu.Lock()
	var a *Arena
	if c.pin != nil {
		a, c.pin.cur = c.pin.cur, nil
	}
	c.mu.Unlock()
	seqs, reps, err := c.Take() // waits for the copies (Result)
	return seqs, reps, a, err
}

// visitPinned records spec's tensor with an asynchronous copy when the
// capturer and the device allow it: it returns the gathered tensor (a view
// of the pass's arena, filled once the copy's event is waited for) and
// ok; ok=false means copy it synchronously. c.mu held.
func (c *Capturer) visitPinned(ev *model.Event, spec CaptureSpec, ranks []*model.RankView) (*Gathered, bool, error) {
	if c.pin == nil || ev.Batch.Step != 0 || len(c.faults) > 0 {
		return nil, false, nil
	}
	ah, ok := ranks[0].Device.(model.AsyncHoster)
	if !ok {
		return nil, false, nil
	}
	sts := make([]model.SiteTensor, len(ranks))
	for i, v := range ranks {
		st, ok := v.Tensor(spec.Tensor)
		if !ok || st.T == nil || st.Shard.Kind == model.Sharded || st.Shard.Kind == model.Partial {
			return nil, false, nil // GatherSite names what is missing, or gathers the shards
		}
		sts[i] = st
	}
	shape := sts[0].T.Shape()
	if len(shape) < 2 {
		return nil, false, nil
	}
	rows, cols, dt := shape[0], tensor.Numel(shape[1:]), sts[0].T.DType()
	n := int64(rows) * int64(cols) * int64(dt.Size())
	if n == 0 {
		return nil, false, nil
	}
	p := c.pin
	if p.cur == nil {
		if p.dev == nil {
			p.dev = ah
		}
		if p.dev != ah { // buffers are pinned through one device
			return nil, false, nil
		}
		size := int64(max(p.batchTokens, rows)) * int64(cols) * int64(dt.Size()) * int64(len(c.specs))
		a, err := p.pool.acquire(ah, size)
		if err != nil {
			return nil, false, err
		}
		p.cur = a
	}
	a := p.cur
	if p.dev != ah || a.used+n > int64(len(a.buf.Bytes())) {
		return nil, false, nil
	}
	off := a.used
	wait, err := ah.CopyRowsAsync(sts[0].T, 0, rows, a.buf, off)
	if err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", spec.Site, spec.Tensor, err)
	}
	a.used += n
	p.events = append(p.events, wait)
	data := a.buf.Bytes()[off : off+n : off+n]
	g := &Gathered{T: &tensor.Tensor{Shape: []int{rows, cols}, DType: dt, Data: data}, How: "replicated"}
	if len(ranks) == 1 {
		return g, true, nil
	}
	// Every rank's copy against rank 0's, all reduced where the data
	// lives (the host copy has not landed yet).
	g.compareReplicas(ranks[0].Device.Moments(sts[0].T, 0, rows, 0, cols), ranks, sts, rows, cols)
	g.How = fmt.Sprintf("replicated (%d ranks)", len(ranks))
	return g, true, nil
}

// Arena is one pass's pinned host memory in a batch job's asynchronous
// captures: the pass's captured tensors are views of it. It is reference
// counted (Add, Done) and returns to its pool at the last Done. A nil
// *Arena (nothing copied asynchronously) accepts Add and Done.
type Arena struct {
	pool *pinnedPool
	buf  model.PinnedBuffer
	used int64
	refs atomic.Int64
}

// Add takes k more references.
func (a *Arena) Add(k int) {
	if a != nil {
		a.refs.Add(int64(k))
	}
}

// Done drops one reference; the last gives the arena back to the pool.
func (a *Arena) Done() {
	if a == nil {
		return
	}
	if n := a.refs.Add(-1); n == 0 {
		a.pool.release(a)
	} else if n < 0 {
		panic("capture: Arena.Done without a reference")
	}
}

// pinnedPool hands out up to max arenas, pinning each on first need and
// reusing it afterwards; acquire waits while all are in use (the writers'
// back-pressure on the forward passes).
type pinnedPool struct {
	mu   sync.Mutex
	cond *sync.Cond
	max  int
	all  []*Arena
	free []*Arena
}

// acquire returns a free arena of at least size bytes (one reference),
// pinning a new one while fewer than max exist, else waiting for a
// release. An arena too small for size is freed and pinned again.
func (p *pinnedPool) acquire(dev model.AsyncHoster, size int64) (*Arena, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) == 0 && len(p.all) >= p.max {
		p.cond.Wait()
	}
	var a *Arena
	if n := len(p.free); n > 0 {
		a, p.free = p.free[n-1], p.free[:n-1]
		if int64(len(a.buf.Bytes())) < size {
			p.drop(a)
			a = nil
		}
	}
	if a == nil {
		buf, err := dev.AllocPinned(size)
		if err != nil {
			return nil, fmt.Errorf("%w: pinned host memory for a batch's captures (%d bytes): %w", ErrCapture, size, err)
		}
		a = &Arena{pool: p, buf: buf}
		p.all = append(p.all, a)
	}
	a.used = 0
	a.refs.Store(1)
	return a, nil
}

// drop frees an arena and forgets it (p.mu held).
func (p *pinnedPool) drop(a *Arena) {
	a.buf.Free()
	for i, x := range p.all {
		if x == a {
			p.all = append(p.all[:i], p.all[i+1:]...)
			break
		}
	}
}

func (p *pinnedPool) release(a *Arena) {
	p.mu.Lock()
	p.free = append(p.free, a)
	p.mu.Unlock()
	p.cond.Signal()
}

// close frees every arena's buffer.
func (p *pinnedPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for _, a := range p.all {
		if err := a.buf.Free(); err != nil && first == nil {
			first = err
		}
	}
	p.all, p.free = nil, nil
	return first
}
