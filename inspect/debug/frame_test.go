package debug

import (
	"fmt"
	"testing"

	"hsdb/inspect/client"
)

// frame N looks at an enclosing module's inputs: at layer 2's down_proj,
// the decoder layer's input and input_residual are layer 1's hidden_states
// and residual, and the MLP's input is layer 2's post_attention_layernorm
// output (both copied by an independent hook at those sites); up and down
// move between them; a stop goes back to the stopped site.
func TestFrameShowsEnclosingInputs(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, tp := range []int{1, 2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				layer1 := referenceOn(t, dev, tp, "model.layers.1")
				post := referenceOn(t, dev, tp, "model.layers.2.post_attention_layernorm")
				s := newSessionOn(t, dev, tp)
				if _, err := s.Break("layers.2.mlp.down_proj", "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				fr, err := s.SelectFrame(2)
				if err != nil {
					t.Fatal(err)
				}
				if fr.Site != "model.layers.2" || len(fr.Outputs[0]) != 2 {
					t.Fatalf("frame 2: %+v", fr)
				}
				check := func(name string, want []float32) {
					t.Helper()
					for r := range tp {
						v, err := s.Values(name, client.Index{Rows: client.IndexSpec{}, Cols: client.IndexSpec{}}, client.Slice{Rank: r, Seq: -1})
						if err != nil {
							t.Fatal(err)
						}
						got := v.Ranks[0].Values
						w := len(got[0])
						for i, row := range got {
							for j, x := range row {
								if float32(x) != want[i*w+j] {
									t.Fatalf("%s rank %d [%d, %d]: %g, want %g", name, r, i, j, x, want[i*w+j])
								}
							}
						}
					}
				}
				check("input", layer1["hidden_states"][0].F32())
				check("input_residual", layer1["residual"][0].F32())
				if _, err := s.SetVar(client.EditRequest{Tensor: "input", Slice: client.All, Op: "=", Value: 0}); err == nil {
					t.Errorf("set var on an enclosing module's input accepted")
				}
				if _, err := s.SelectFrame(1); err != nil { // #1: the MLP (gdb numbers outward from the stopped site #0)
					t.Fatal(err)
				}
				check("input", post["hidden_states"][0].F32())
				if _, err := s.SelectFrame(4); err == nil {
					t.Errorf("frame 4 (the root) accepted")
				}
				if _, err := s.SelectFrame(-1); err == nil {
					t.Errorf("frame -1 below the stopped site accepted")
				}
				if fr, err := s.SelectFrame(0); err != nil || fr.Site != "model.layers.2.mlp.down_proj" {
					t.Fatalf("frame 0: %+v %v", fr, err)
				}
				if _, err := s.SelectFrame(2); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Break("layers.3", "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Continue())
				if fr, err := s.CurrentFrame(); err != nil || fr.Site != "model.layers.3" {
					t.Errorf("after a stop the frame is %+v (%v), want the stopped site", fr, err)
				}
			})
		}
	})
}
