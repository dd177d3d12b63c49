package check

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// FuzzCheckFile: arbitrary bytes as the file of `hsdb check FILE` without
// a model (CheckFile, then the text, diff and JSON reports), with or
// without the sizes of testdata/hf/llama's config.json (hidden 96, 3
// layers) and at a fuzzed --tp. Seeds, built here and kept under 1 KB (the
// fuzzer minimizes every new input by re-running it once per byte
// removed: with the 7-14 KB fixtures as seeds it ran 13 inputs in 75 s):
// a safetensors capture (hidden_states [2, 96] bf16, input_ids, loss_mask,
// metadata naming layers) and a torch.save dict of hidden_states [2, 2]
// and input_ids; inputs over 4 KB are skipped (FuzzReadTorchFile fuzzes
// the torch.save reader on its own). CheckFile never returns nil; an
// unreadable file's Err wraps ErrUnreadable or ErrForbiddenGlobal, without
// a recovered Go panic in it, and the report fails; no panic or hang.
func FuzzCheckFile(f *testing.F) {
	var b bytes.Buffer
	if err := safetensors.Write(&b, []safetensors.Named{
		{Name: "hidden_states", T: tensor.New(tensor.BF16, 2, 96)},
		{Name: "input_ids", T: tensor.FromI64([]int64{1, 5}, 2)},
		{Name: "loss_mask", T: tensor.FromI64([]int64{0, 1}, 2)},
	}, map[string]string{"layers": "1,2"}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes(), true, uint8(2))
	view := "ctorch._utils\n_rebuild_tensor_v2\n(" +
		"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ" +
		"K\x00K\x02K\x02\x86K\x02K\x01\x86\x89NtR"
	f.Add(storedArchive([]byte("\x80\x02}q\x00(X\x0d\x00\x00\x00hidden_states"+view+
		"X\x09\x00\x00\x00input_idsctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nLongStorage\nX\x01\x00\x00\x001X\x03\x00\x00\x00cpuK\x02tQK\x00K\x02\x85K\x01\x85\x89NtRu."),
		map[string][]byte{"0": make([]byte, 16), "1": {1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}}), false, uint8(0))
	cfg, err := os.ReadFile("../../testdata/hf/llama/config.json")
	if err != nil {
		f.Fatal(err)
	}
	c, _, err := model.ParseConfig(cfg)
	if err != nil {
		f.Fatal(err)
	}
	dims := c.Dims()
	dir := f.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "hsdb-fuzz-"); err == nil {
		dir = shm // a write an execution: on a disk, writeback held the
		// workers to a few executions a second
		f.Cleanup(func() { os.RemoveAll(shm) })
	}
	p := filepath.Join(dir, "capture.bin")
	f.Fuzz(func(t *testing.T, data []byte, withDims bool, tp uint8) {
		if len(data) > 1<<12 {
			return
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := CheckOptions{TP: int(tp % 17)}
		if withDims {
			opts.Dims = dims
		}
		r := CheckFile(p, opts)
		if r == nil {
			t.Fatal("CheckFile returned nil")
		}
		if r.Err != nil {
			if !errors.Is(r.Err, ErrUnreadable) && !errors.Is(r.Err, ErrForbiddenGlobal) {
				t.Fatalf("error of no kind: %v", r.Err)
			}
			if strings.Contains(r.Err.Error(), "runtime error") {
				t.Fatalf("a Go panic turned into an error (an input the reader does not check): %v", r.Err)
			}
			if !r.Failed() {
				t.Fatal("an unreadable file that did not fail")
			}
		}
		r.Lines()
		r.DiffLines()
		r.JSON(false)
	})
}
