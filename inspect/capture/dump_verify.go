package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"syscall"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

var errNoSpace = syscall.ENOSPC

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// contentProblems applies the per-sequence content rules to the tensors
// about to be written: every float tensor finite, hidden_states.{layer}
// [len, hidden_size], and no two layers identical.
func contentProblems(named []safetensors.Named, hidden int) []string {
	var out []string
	var hs []safetensors.Named
	for _, nt := range named {
		if !nt.T.DType.IsFloat() {
			continue
		}
		m := tensor.MomentsF32(nt.T.ToF32())
		if m.NaN+m.Inf > 0 {
			out = append(out, fmt.Sprintf("%s has %d NaN and %d Inf", nt.Name, m.NaN, m.Inf))
		}
		if strings.HasPrefix(nt.Name, "hidden_states.") {
			hs = append(hs, nt)
			if len(nt.T.Shape) != 2 || (hidden > 0 && nt.T.Shape[1] != hidden) {
				out = append(out, fmt.Sprintf("%s is %s, not [len, hidden_size %d]", nt.Name, tensor.ShapeString(nt.T.Shape), hidden))
			}
		}
	}
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			if bytes.Equal(hs[i].T.Data, hs[j].T.Data) {
				out = append(out, fmt.Sprintf("%s and %s are identical", hs[i].Name, hs[j].Name))
			}
		}
	}
	return out
}

// verifyFile re-reads a written sequence file and checks it against its
// record: the same tensor names, each with the recorded dtype, shape and
// sha256 of its bytes; input_ids [len]; and, when want is given, every
// float tensor's values equal to want (the captured values rounded to the
// dump dtype). Errors wrap ErrInvalid (or the reader's error) and name the
// file and tensor.
func verifyFile(path string, rec SeqRecord, want map[string][]float32, dt tensor.DType) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("%w: re-reading %s: %w", ErrInvalid, path, err)
	}
	defer f.Close()
	names := f.Names()
	var recNames []string
	for k := range rec.Tensors {
		recNames = append(recNames, k)
	}
	sort.Strings(recNames)
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	if strings.Join(sorted, ",") != strings.Join(recNames, ",") {
		return fmt.Errorf("%w: %s holds %s, the manifest lists %s", ErrInvalid, path, strings.Join(sorted, ", "), strings.Join(recNames, ", "))
	}
	for _, name := range names {
		t, err := f.Tensor(name)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, path, err)
		}
		r := rec.Tensors[name]
		if t.DType.SafetensorsName() != r.DType || !slices.Equal(t.Shape, r.Shape) {
			return fmt.Errorf("%w: %s: %s reads as %s %s, recorded %s %s", ErrInvalid, path, name, t.DType, tensor.ShapeString(t.Shape), r.DType, tensor.ShapeString(r.Shape))
		}
		if got := sha256Hex(t.Data); got != r.SHA256 {
			return fmt.Errorf("%w: %s: %s has sha256 %s, recorded %s", ErrInvalid, path, name, got, r.SHA256)
		}
		if name == "input_ids" && (len(t.Shape) != 1 || t.Shape[0] != rec.Length || t.DType != tensor.I64) {
			return fmt.Errorf("%w: %s: input_ids is %s %s, want I64 [%d]", ErrInvalid, path, t.DType, tensor.ShapeString(t.Shape), rec.Length)
		}
		if strings.HasPrefix(name, "hidden_states.") && (len(t.Shape) != 2 || t.Shape[0] != rec.Length || t.DType != dt) {
			return fmt.Errorf("%w: %s: %s is %s %s, want %s [%d, hidden]", ErrInvalid, path, name, t.DType, tensor.ShapeString(t.Shape), dt, rec.Length)
		}
		w, ok := want[name]
		if !ok {
			continue
		}
		got := t.ToF32()
		if len(got) != len(w) {
			return fmt.Errorf("%w: %s: %s has %d values, captured %d", ErrInvalid, path, name, len(got), len(w))
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(w[i]) {
				c := max(t.Cols(), 1)
				return fmt.Errorf("%w: %s: %s[%d, %d] reads %g, captured %g", ErrInvalid, path, name, i/c, i%c, got[i], w[i])
			}
		}
	}
	return nil
}
