package enginetest

import (
	"fmt"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// SplitSeqs splits an HF fixture's input_ids [tokens] into its sequences by
// seq_lens [sequences] (testdata/README.md: the sequences concatenated along
// tokens, in order). It is an error when the lengths do not sum to the
// number of ids or one is negative.
func SplitSeqs(ids, lens *tensor.Tensor) ([][]int32, error) {
	var seqs [][]int32
	off := 0
	for i := range lens.Numel() {
		n := int(lens.Int(i))
		if n < 0 || off+n > ids.Numel() {
			return nil, fmt.Errorf("seq_lens[%d] = %d runs past input_ids' %d tokens (offset %d)", i, n, ids.Numel(), off)
		}
		s := make([]int32, n)
		for j := range n {
			s[j] = int32(ids.Int(off + j))
		}
		seqs = append(seqs, s)
		off += n
	}
	if off != ids.Numel() {
		return nil, fmt.Errorf("seq_lens sum to %d, input_ids has %d", off, ids.Numel())
	}
	return seqs, nil
}

// HFSeqs reads input_ids and seq_lens from an HF fixture's
// reference.safetensors and returns its token sequences; it fails t on a
// missing tensor or lengths that do not match the ids.
func HFSeqs(t testing.TB, ref *safetensors.File) [][]int32 {
	t.Helper()
	ids, err := ref.Tensor("input_ids")
	if err != nil {
		t.Fatal(err)
	}
	lens, err := ref.Tensor("seq_lens")
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := SplitSeqs(ids, lens)
	if err != nil {
		t.Fatalf("%s: %v", ref.Path(), err)
	}
	return seqs
}
