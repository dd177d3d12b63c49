package debug

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/inspect/client"
)

// save writes the gathered q of qkv_proj (sharded over heads at tp 2 and
// 4): the .npy is read here by NumPy's format 1.0 layout (magic, version,
// header dict, data at a multiple of 64) and the .safetensors with the
// reader; both hold the ranks' columns concatenated in rank order, as an
// independent hook copied them.
func TestSaveGathered(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		const site = "model.layers.1.self_attn.qkv_proj"
		for _, tp := range []int{1, 2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				ref := referenceOn(t, dev, tp, site)["q"]
				rows := ref[0].Rows()
				var want []float32
				for r := range rows {
					for _, p := range ref {
						want = append(want, p.F32()[r*p.Cols():(r+1)*p.Cols()]...)
					}
				}
				cols := len(want) / rows
				s := newSessionOn(t, dev, tp)
				if _, err := s.Break(site, "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				dir := t.TempDir()
				npy := filepath.Join(dir, "q.npy")
				if _, err := s.Save("q", npy, client.All, false); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(npy)
				if err != nil {
					t.Fatal(err)
				}
				if string(b[:8]) != "\x93NUMPY\x01\x00" {
					t.Fatalf("npy magic %q", b[:8])
				}
				hl := int(binary.LittleEndian.Uint16(b[8:10]))
				hdr := string(b[10 : 10+hl])
				wantHdr := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols)
				if (10+hl)%64 != 0 || hdr[:len(wantHdr)] != wantHdr || hdr[hl-1] != '\n' {
					t.Fatalf("npy header %q (length %d)", hdr, hl)
				}
				data := b[10+hl:]
				if len(data) != 4*len(want) {
					t.Fatalf("npy data %d bytes, want %d", len(data), 4*len(want))
				}
				for i, w := range want {
					if g := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])); g != w {
						t.Fatalf("npy value %d: %g, want %g", i, g, w)
					}
				}
				st := filepath.Join(dir, "q.safetensors")
				rep, err := s.Save("q", st, client.All, false)
				if err != nil {
					t.Fatal(err)
				}
				f, err := safetensors.Open(st)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				g, err := f.Tensor(site + ":q")
				if err != nil {
					t.Fatal(err)
				}
				if g.Rows() != rows || g.Cols() != cols || rep.Shape[1] != cols {
					t.Fatalf("safetensors q %v, report %v, want [%d, %d]", g.Shape, rep.Shape, rows, cols)
				}
				for i, v := range g.ToF32() {
					if v != want[i] {
						t.Fatalf("safetensors value %d: %g, want %g", i, v, want[i])
					}
				}
				if _, err := s.Save("q", filepath.Join(dir, "q.txt"), client.All, false); err == nil {
					t.Errorf("a .txt file accepted")
				}
				if tp > 1 {
					r1 := filepath.Join(dir, "r1.npy")
					if rep, err := s.Save("q", r1, client.Slice{Rank: 1, Seq: -1}, false); err != nil || rep.Shape[1] != ref[1].Cols() {
						t.Errorf("save --rank 1: %+v, %v: want rank 1's %d columns", rep, err, ref[1].Cols())
					}
				}
			})
		}
	})
}

// compare against a dump of the same inputs: no departure; after doubling
// token 3 of sequence 0 at layer 1, layer 2 departs first at position 3 of
// sequence 0 (causal attention: earlier positions and the other sequence
// cannot see the edit) and sequence 1 stays equal.
func TestCompareFindsFirstDeparture(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, tp := range []int{1, 2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				s := newSessionOn(t, dev, tp)
				l := NewLocal(s)
				if err := l.CaptureLayers([]int{1, 2}, "stream"); err != nil {
					t.Fatal(err)
				}
				done(t)(s.Run())
				dir := filepath.Join(t.TempDir(), "ref")
				if _, err := l.Dump(dir, client.DumpRequest{}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Break("layers.1", "", false); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Break("layers.2", "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				rep, err := s.Compare(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Rows) != 2 {
					t.Fatalf("compare rows %+v", rep.Rows)
				}
				for _, r := range rep.Rows {
					if r.FirstToken != -1 || r.MaxAbs != 0 || !(math.Abs(r.Cosine-1) <= 1e-12) || r.IDsDiffer != 0 {
						t.Errorf("same inputs: %+v, want equal", r)
					}
				}
				if _, err := s.SetVar(client.EditRequest{Tensor: "stream", HasIndex: true, Index: client.Index{Rows: client.IndexSpec{Lo: 3, Single: true, HasLo: true}}, Slice: client.All, Op: "*", Value: 2}); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Continue())
				rep, err = s.Compare(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Rows) != 2 {
					t.Fatalf("compare rows after the edit %+v, want one per sequence", rep.Rows)
				}
				for _, r := range rep.Rows {
					want := -1
					if r.Seq == 0 {
						want = 3
					}
					if r.FirstToken != want {
						t.Errorf("seq %d: first departure %d, want %d (%+v)", r.Seq, r.FirstToken, want, r)
					}
				}
				s.Kill()
				if _, err := s.Break("layers.0", "", false); err != nil {
					t.Fatal(err)
				}
				s.Delete(1, 2)
				stopped(t)(s.Run())
				if _, err := s.Compare(dir); !errors.Is(err, client.ErrNoTensor) {
					t.Errorf("compare at layers.0 (not in the dump): %v, want ErrNoTensor", err)
				}
			})
		}
	})
}
