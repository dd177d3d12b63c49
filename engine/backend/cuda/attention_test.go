//go:build cuda

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// attnCase is a varlen batch against a KV cache [slots, capacity, width]:
// history tokens are written first (an earlier forward), then the batch's
// own keys, then the batch attends.
type attnCase struct {
	name                   string
	heads, kvHeads, dk, dv int
	window                 int
	slots, capacity        int
	histSlots, histPos     []int32
	batchSlots, batchPos   []int32
}

// seqTokens appends n tokens of slot s at positions from..from+n-1.
func seqTokens(slots, pos []int32, s, from, n int) ([]int32, []int32) {
	for i := range n {
		slots = append(slots, int32(s))
		pos = append(pos, int32(from+i))
	}
	return slots, pos
}

func mixedCase(name string, heads, kvHeads, dk, dv, window int) attnCase {
	c := attnCase{name: name, heads: heads, kvHeads: kvHeads, dk: dk, dv: dv, window: window, slots: 4, capacity: 64}
	// History: slot 0 holds positions 0..29, slot 3 positions 0..39.
	c.histSlots, c.histPos = seqTokens(nil, nil, 0, 0, 30)
	c.histSlots, c.histPos = seqTokens(c.histSlots, c.histPos, 3, 0, 40)
	// Batch: a fresh 21-token prompt in slot 2, 5 more tokens for slot 0
	// (chunked prefill), one decode token for slot 3.
	c.batchSlots, c.batchPos = seqTokens(nil, nil, 2, 0, 21)
	c.batchSlots, c.batchPos = seqTokens(c.batchSlots, c.batchPos, 0, 30, 5)
	c.batchSlots, c.batchPos = seqTokens(c.batchSlots, c.batchPos, 3, 40, 1)
	return c
}

// refAttention is causal attention in float64 over the host copy of the
// cache (keys by (slot, position)), the textbook softmax(q·kᵀ·scale)·v.
func refAttention(c attnCase, q []float32, kc, vc map[[2]int32][]float32, scale float64) []float32 {
	g := c.heads / c.kvHeads
	out := make([]float32, len(c.batchSlots)*c.heads*c.dv)
	for t := range c.batchSlots {
		s, p := c.batchSlots[t], int(c.batchPos[t])
		lo := 0
		if c.window > 0 {
			lo = max(0, p-c.window+1)
		}
		for h := range c.heads {
			kvh := h / g
			qr := q[(t*c.heads+h)*c.dk : (t*c.heads+h+1)*c.dk]
			scores := make([]float64, p-lo+1)
			m := math.Inf(-1)
			for j := lo; j <= p; j++ {
				k := kc[[2]int32{s, int32(j)}][kvh*c.dk : (kvh+1)*c.dk]
				dot := 0.0
				for i := range qr {
					dot += float64(qr[i]) * float64(k[i])
				}
				scores[j-lo] = dot * scale
				m = math.Max(m, scores[j-lo])
			}
			sum := 0.0
			for i := range scores {
				scores[i] = math.Exp(scores[i] - m)
				sum += scores[i]
			}
			for e := range c.dv {
				acc := 0.0
				for j := lo; j <= p; j++ {
					acc += scores[j-lo] * float64(vc[[2]int32{s, int32(j)}][kvh*c.dv+e])
				}
				out[(t*c.heads+h)*c.dv+e] = float32(acc / sum)
			}
		}
	}
	return out
}

func TestAttention(t *testing.T) {
	d := gpu(t)
	cases := []attnCase{
		mixedCase("gqa4-d64", 8, 2, 64, 64, 0),
		mixedCase("mla-dk192-dv128", 4, 4, 192, 128, 0),
		mixedCase("window7", 4, 1, 32, 32, 7),
	}
	for ci, c := range cases {
		for _, dt := range floatDTypes {
			rng := rand.New(rand.NewPCG(uint64(ci), 99))
			kw, vw := c.kvHeads*c.dk, c.kvHeads*c.dv
			kc := map[[2]int32][]float32{}
			vc := map[[2]int32][]float32{}
			// Poison the whole cache: a position attention must not read
			// stays NaN and would make the output NaN.
			kCache := poisoned(t, d, c.slots*c.capacity*kw, dt)
			vCache := poisoned(t, d, c.slots*c.capacity*vw, dt)
			write := func(slots, pos []int32) *TokenBatch {
				b, err := d.NewTokenBatch(slots, pos, c.slots, c.capacity)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Free() })
				n := len(slots)
				k := roundTo(randn(rng, n*kw, 1), dt)
				v := roundTo(randn(rng, n*vw, 1), dt)
				for i := range n {
					kc[[2]int32{slots[i], pos[i]}] = k[i*kw : (i+1)*kw]
					vc[[2]int32{slots[i], pos[i]}] = v[i*vw : (i+1)*vw]
				}
				if err := d.KVCacheWrite(kCache.Ptr(), upload(t, d, k, dt).Ptr(), b, kw, kw, dt); err != nil {
					t.Fatal(err)
				}
				if err := d.KVCacheWrite(vCache.Ptr(), upload(t, d, v, dt).Ptr(), b, vw, vw, dt); err != nil {
					t.Fatal(err)
				}
				return b
			}
			write(c.histSlots, c.histPos)
			batch := write(c.batchSlots, c.batchPos)

			// The cache holds exactly the written rows and NaN elsewhere.
			got := download(t, d, kCache, c.slots*c.capacity*kw, dt)
			for s := range c.slots {
				for p := range c.capacity {
					row := got[(s*c.capacity+p)*kw : (s*c.capacity+p+1)*kw]
					if want, ok := kc[[2]int32{int32(s), int32(p)}]; ok {
						assertClose(t, c.name+"/kv_cache_write", row, want, 0, 0)
					} else if !math.IsNaN(float64(row[0])) {
						t.Fatalf("%s/%s: cache (%d, %d) was written but no token has it", c.name, dt, s, p)
					}
				}
			}

			n := len(c.batchSlots)
			q := roundTo(randn(rng, n*c.heads*c.dk, 1), dt)
			qb := upload(t, d, q, dt)
			scale := float32(1 / math.Sqrt(float64(c.dk)))
			p := AttnParams{Heads: c.heads, KVHeads: c.kvHeads, HeadDimK: c.dk, HeadDimV: c.dv, Window: c.window, Scale: scale}
			want := refAttention(c, q, kc, vc, float64(scale))
			at, rt := tol(dt)
			if dt == tensor.F32 {
				at, rt = 2e-5, 1e-4
			}
			for _, k := range []struct {
				name string
				run  func(out driver.Ptr) error
			}{
				{"prefill", func(out driver.Ptr) error {
					return d.AttentionPrefill(out, qb.Ptr(), kCache.Ptr(), vCache.Ptr(), batch, p, dt)
				}},
				{"decode", func(out driver.Ptr) error {
					return d.AttentionDecode(out, qb.Ptr(), kCache.Ptr(), vCache.Ptr(), batch, p, dt)
				}},
			} {
				out := poisoned(t, d, n*c.heads*c.dv, dt)
				if err := k.run(out.Ptr()); err != nil {
					t.Fatal(err)
				}
				assertClose(t, c.name+"/"+k.name+"/"+dt.String(), download(t, d, out, n*c.heads*c.dv, dt), want, at, rt)
			}
		}
	}
}

// TestAttentionPicksDecode: a batch of one token per slot is a decode batch.
func TestAttentionPicksDecode(t *testing.T) {
	d := gpu(t)
	b, err := d.NewTokenBatch([]int32{0, 1, 2}, []int32{5, 0, 9}, 3, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if !b.singles || b.nTiles != 3 {
		t.Fatalf("decode batch: singles %v tiles %d, want true and 3", b.singles, b.nTiles)
	}
	// 40 tokens of one slot make tiles of 16, 16 and 8.
	slots := make([]int32, 40)
	pos := make([]int32, 40)
	for i := range pos {
		pos[i] = int32(i)
	}
	b2, err := d.NewTokenBatch(slots, pos, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Free()
	if b2.singles || b2.nTiles != 3 {
		t.Fatalf("prefill batch: singles %v tiles %d, want false and 3", b2.singles, b2.nTiles)
	}
}
