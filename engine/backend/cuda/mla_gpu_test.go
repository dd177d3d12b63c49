//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// TestMLAKVWrite checks kernels/mla.cu against the layout written out by
// hand: cache row rows[t] of k holds per head kv's first nope values of
// that head then k_pe's row, v's row per head kv's last dv values; rows
// not written keep the NaN poison. Copies are exact, so values must be
// bit-equal. Shapes: DeepSeek-V3's head dims (16-byte copies), the test
// model's (24+8 / 20: 16-byte copies in f32, element copies in bf16/f16)
// and odd widths.
func TestMLAKVWrite(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for _, s := range []MLAKVParams{
		{Tokens: 5, Heads: 4, Nope: 128, Rope: 64, V: 128, CacheRows: 16},
		{Tokens: 7, Heads: 3, Nope: 24, Rope: 8, V: 20, CacheRows: 9},
		{Tokens: 3, Heads: 2, Nope: 5, Rope: 3, V: 7, CacheRows: 4},
	} {
		for _, dt := range floatDTypes {
			name := fmt.Sprintf("%dh_%d+%d_%d/%s", s.Heads, s.Nope, s.Rope, s.V, dt)
			dk, dkv := s.Nope+s.Rope, s.Nope+s.V
			kv := roundTo(randn(rng, s.Tokens*s.Heads*dkv, 1), dt)
			pe := roundTo(randn(rng, s.Tokens*s.Rope, 1), dt)
			rows := make([]int32, s.Tokens)
			for i, r := range rng.Perm(s.CacheRows)[:s.Tokens] {
				rows[i] = int32(r)
			}
			nk, nv := s.CacheRows*s.Heads*dk, s.CacheRows*s.Heads*s.V
			kb, vb := poisoned(t, d, nk, dt), poisoned(t, d, nv, dt)
			if err := d.MLAKVWrite(kb.Ptr(), vb.Ptr(), upload(t, d, kv, dt).Ptr(), upload(t, d, pe, dt).Ptr(), uploadI32(t, d, rows).Ptr(), s, dt); err != nil {
				t.Fatal(err)
			}
			wantK, wantV := make([]float32, nk), make([]float32, nv)
			for i := range wantK {
				wantK[i] = float32(math.NaN())
			}
			for i := range wantV {
				wantV[i] = float32(math.NaN())
			}
			for tk, r := range rows {
				for h := range s.Heads {
					for j := range dk {
						x := pe[tk*s.Rope+j-min(j, s.Nope)]
						if j < s.Nope {
							x = kv[(tk*s.Heads+h)*dkv+j]
						}
						wantK[(int(r)*s.Heads+h)*dk+j] = x
					}
					for j := range s.V {
						wantV[(int(r)*s.Heads+h)*s.V+j] = kv[(tk*s.Heads+h)*dkv+s.Nope+j]
					}
				}
			}
			same := func(what string, got, want []float32) {
				for i := range want {
					if !(got[i] == want[i] || math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
						t.Fatalf("%s: %s[%d] = %v, want %v", name, what, i, got[i], want[i])
					}
				}
			}
			same("k", download(t, d, kb, nk, dt), wantK)
			same("v", download(t, d, vb, nv, dt), wantV)
		}
	}
	if err := d.MLAKVWrite(0, 0, 0, 0, 0, MLAKVParams{Tokens: 1, Heads: 0}, tensor.BF16); !errorsIsBadArgument(err) {
		t.Errorf("0 heads: %v, want ErrBadArgument", err)
	}
}

// TestRankMLAOps: Device.RoPEInPlace on MLA's query layout (per head
// [q_nope | q_pe], only q_pe rotating) against the host reference refRoPE,
// and Device.WriteMLAKV refusing a kv of the wrong width and a row outside
// the cache.
func TestRankMLAOps(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		g := p.g
		g.PushScope()
		defer g.PopScope()
		const T, heads, nope, rope = 6, 3, 24, 8
		x, _ := p.act(T, heads*(nope+rope), 1)
		before := g.ToHost(x, 0, T, 0, heads*(nope+rope)).F32()
		pos := []int32{0, 1, 2, 700, 3, 4095}
		inv := make([]float32, rope/2)
		for i := range inv {
			inv[i] = float32(math.Pow(10000, -float64(2*i)/rope))
		}
		a := &backend.RoPEArgs{Heads: heads, HeadDim: rope, Stride: nope + rope, Offset: nope, Pos: pos, InvFreq: inv, MScale: 1.25, Interleaved: true}
		g.RoPEInPlace(x, a)
		want := refRoPE(before, pos, inv, RoPEParams{Tokens: T, Heads: heads, RowStride: heads * (nope + rope), HeadStride: nope + rope,
			RotOffset: nope, RotDim: rope, Interleaved: true, MScale: 1.25})
		at, rt := p.tols(1.25)
		assertClose(t, "rope in place", g.ToHost(x, 0, T, 0, heads*(nope+rope)).F32(), want, at, rt)

		k, _ := p.act(8, heads*(nope+rope), 1)
		v, _ := p.act(8, heads*20, 1)
		kv, _ := p.act(T, heads*(nope+20), 1)
		pe, _ := p.act(T, rope, 1)
		bad, _ := p.act(T, heads*(nope+20)+1, 1)
		args := &backend.MLAKVArgs{Heads: heads, Nope: nope, Rope: rope, V: 20, Rows: []int32{0, 1, 2, 3, 4, 5}}
		for _, c := range []struct {
			name string
			kv   backend.Tensor
			rows []int32
		}{{"kv too wide", bad, args.Rows}, {"row outside", kv, []int32{0, 1, 2, 3, 4, 8}}} {
			func() {
				defer func() {
					e, ok := recover().(*backend.DeviceError)
					if !ok || !errorsIsBadArgument(e) {
						t.Errorf("%s: panic %v, want a bad-argument DeviceError", c.name, e)
					}
				}()
				b := *args
				b.Rows = c.rows
				g.WriteMLAKV(k, v, c.kv, pe, &b)
			}()
		}
	})
}
