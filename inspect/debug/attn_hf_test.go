package debug

import (
	"fmt"
	"math"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
	"hsdb/inspect/client"
)

// attn_probs equals HF transformers' output_attentions (eager attention,
// f32; testdata/hf/NAME/attn_probs.safetensors, written by
// scripts/fixtures/make_hf_fixtures.py) for every layer, head and sequence
// of the Llama (GQA: 8 heads over 2 kv heads) and DeepSeek-V3 (MLA with
// YaRN) fixtures within 1e-5, at --tp 1, 2 and 4; each row sums to 1.
func TestAttnProbsMatchHF(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, name := range []string{"llama", "deepseek_v3"} {
			dir := "../../testdata/hf/" + name
			ref, err := safetensors.Open(dir + "/reference.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			probs, err := safetensors.Open(dir + "/attn_probs.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			seqs := enginetest.HFSeqs(t, ref)
			for _, tp := range []int{1, 2, 4} {
				t.Run(fmt.Sprintf("%s/tp%d", name, tp), func(t *testing.T) {
					e, err := engine.Open(dir, engine.Options{TP: tp, Device: dev})
					if err != nil {
						t.Fatal(err)
					}
					defer e.Close()
					s := New(e)
					defer s.Kill()
					if err := s.SetBatch(seqs); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Break("layers.*.self_attn.attn", "", false); err != nil {
						t.Fatal(err)
					}
					o, err := s.Run()
					compared := 0
					for layer := 0; layer < e.Dims.Layers; layer++ {
						st := stopped(t)(o, err)
						if want := fmt.Sprintf("model.layers.%d.self_attn.attn", layer); st.Site != want {
							t.Fatalf("stopped at %s, want %s", st.Site, want)
						}
						for sq := range seqs {
							want, err := probs.Tensor(fmt.Sprintf("attn.%d.probs.%d", layer, sq))
							if err != nil {
								t.Fatal(err)
							}
							w := want.ToF32()
							heads, n := want.Shape[0], want.Shape[1]
							for h := range heads {
								rep, err := s.AttnProbs(h, sq)
								if err != nil {
									t.Fatal(err)
								}
								if len(rep.Probs) != n {
									t.Fatalf("layer %d seq %d head %d: %d rows, HF %d", layer, sq, h, len(rep.Probs), n)
								}
								for i := range n {
									if !(math.Abs(rep.RowSums[i]-1) <= 1e-9) {
										t.Errorf("layer %d seq %d head %d row %d sums to %g", layer, sq, h, i, rep.RowSums[i])
									}
									for j := range n {
										hf := float64(w[(h*n+i)*n+j])
										if d := math.Abs(rep.Probs[i][j] - hf); !(d <= 1e-5) {
											t.Fatalf("layer %d seq %d head %d [%d, %d]: %g, HF %g", layer, sq, h, i, j, rep.Probs[i][j], hf)
										}
									}
								}
								compared++
							}
						}
						o, err = s.Continue()
					}
					done(t)(o, err)
					if compared == 0 {
						t.Fatal("nothing compared")
					}
				})
			}
			ref.Close()
			probs.Close()
		}
	})
}

// hist and top on attn_probs look at the attended entries of one head:
// hist counts n(n+1)/2 entries of a causal n-token sequence; top's first
// channel is the largest probability, found here by scanning the report,
// and its row is that query.
func TestAttnHistTop(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		s := newSessionOn(t, dev, 2)
		if _, err := s.Break("layers.0.self_attn.attn", "", false); err != nil {
			t.Fatal(err)
		}
		stopped(t)(s.Run())
		head := 5
		rep, err := s.AttnProbs(head, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := len(rep.Probs)
		h, err := s.Hist(AttnProbsName, 10, client.Slice{Rank: -1, Seq: 0, Head: &head})
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, c := range h.Hist.Counts {
			total += int(c)
		}
		if total != n*(n+1)/2 {
			t.Errorf("hist counts %d entries, want %d", total, n*(n+1)/2)
		}
		best, bi, bj := -1.0, 0, 0
		for i, row := range rep.Probs {
			for j, x := range row {
				if x > best {
					best, bi, bj = x, i, j
				}
			}
		}
		top, err := s.Top(AttnProbsName, 1, client.Slice{Rank: -1, Seq: 0, Head: &head})
		if err != nil {
			t.Fatal(err)
		}
		if c := top.Channels[0]; c.Col != bj || c.Row != bi || float64(float32(best)) != c.Value || c.Pos != bi {
			t.Errorf("top %+v, want key %d query %d value %g", c, bj, bi, best)
		}
		if _, err := s.Hist(AttnProbsName, 10, client.All); err == nil {
			t.Errorf("hist attn_probs without --head accepted")
		}
		if _, err := s.Print("attn_out", client.Slice{Rank: -1, Seq: -1, Head: &head}); err == nil {
			t.Errorf("--head on attn_out accepted")
		}
	})
}
