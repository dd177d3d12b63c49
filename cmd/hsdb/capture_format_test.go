package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/check"
)

// fixtureIDs returns the HF llama fixture's sequences (seq_lens of its
// reference.safetensors: 7, 3, 12 tokens, testdata/README.md) as an --ids
// argument and their lengths.
func fixtureIDs(t *testing.T, ref *safetensors.File) (string, []int) {
	t.Helper()
	var parts []string
	var lens []int
	for _, seq := range enginetest.HFSeqs(t, ref) {
		var p []string
		for _, id := range seq {
			p = append(p, fmt.Sprint(id))
		}
		parts = append(parts, strings.Join(p, ","))
		lens = append(lens, len(seq))
	}
	return strings.Join(parts, ";"), lens
}

// cols returns columns [c0, c0+w) of a [rows, width] float tensor as f32.
func cols(t *tensor.Tensor, rows, width, c0, w int) []float32 {
	v := t.ToF32()
	out := make([]float32, 0, rows*w)
	for r := range rows {
		out = append(out, v[r*width+c0:r*width+c0+w]...)
	}
	return out
}

// TestCaptureSpeculatorsHF: --format speculators --layers 0,1,2,3 on the HF
// llama fixture (3 decoder layers) at --tp 2 writes hs_{idx}.safetensors
// holding token_ids [len] I64 and hidden_states [len, 4, 96]; applying
// speculators' read (hidden_states[:, j]) gives HF's output_hidden_states
// at the ids' positions (reference.safetensors: id 0 = embed, id k =
// layer.{k-1}, the last one before the final norm) within 1e-5, and the
// mapping is printed.
func TestCaptureSpeculatorsHF(t *testing.T) {
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ids, lens := fixtureIDs(t, ref)
	out := filepath.Join(t.TempDir(), "hs")
	stdout, errs, code := runHsdb(t, "capture", "--model", "../../testdata/hf/llama", "--tp", "2", "--format", "speculators", "--layers", "0,1,2,3", "--save-dtype", "f32", "--ids", ids, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	for _, want := range []string{
		"speculators id 0 = stream entering layer 0 = the embeddings (model.embed_tokens) = HF output_hidden_states[0]",
		"speculators id 2 = stream entering layer 2 = hsdb layer 1's output = SGLang id 1 = HF output_hidden_states[2]",
		"speculators id 3 = the last layer's output = hsdb layer 2's output",
		"disk: 1544 bytes per token of tensors", // 4 ids × 96 × 4 bytes (f32 model) + 8 for the token id
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	refKeys := []string{"embed", "layer.0", "layer.1", "layer.2"}
	off := 0
	for i, n := range lens {
		f, err := safetensors.Open(filepath.Join(out, fmt.Sprintf("hs_%d.safetensors", i)))
		if err != nil {
			t.Fatal(err)
		}
		if names := strings.Join(f.Names(), ","); names != "hidden_states,token_ids" {
			t.Errorf("hs_%d holds %s, want hidden_states,token_ids", i, names)
		}
		hs, _ := f.Tensor("hidden_states")
		tok, _ := f.Tensor("token_ids")
		if tok.DType != tensor.I64 || tok.Numel() != n || hs.DType != tensor.F32 || fmt.Sprint(hs.Shape) != fmt.Sprintf("[%d 4 96]", n) {
			t.Fatalf("hs_%d: token_ids %s %v, hidden_states %s %v", i, tok.DType, tok.Shape, hs.DType, hs.Shape)
		}
		for j, k := range refKeys {
			want, _ := ref.RowsView(k, off, off+n)
			if err := enginetest.CheckClose(cols(hs, n, 4*96, j*96, 96), want.ToF32(), 1e-5); err != nil {
				t.Errorf("hs_%d hidden_states[:, %d] vs HF %s: %v", i, j, k, err)
			}
		}
		f.Close()
		off += n
	}
	if _, err := os.Stat(filepath.Join(out, capture.ManifestName)); err != nil {
		t.Errorf("no sidecar manifest: %v", err)
	}
}

// TestCaptureSpecForgeHF: --format specforge --layers 0,1,2 (SGLang ids)
// on the HF llama fixture writes rows_0-2000/data_{idx}.ckpt, torch.save
// archives that check's own unpickler reads as input_ids [len],
// loss_mask [len], hidden_state [1, len, 96] = HF's final_norm and
// aux_hidden_state [1, len, 288] = HF layer.0, layer.1, layer.2
// concatenated, within 1e-5; with --compress the same as .ckpt.gz.
func TestCaptureSpecForgeHF(t *testing.T) {
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ids, lens := fixtureIDs(t, ref)
	for _, gz := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "sf")
		args := []string{"capture", "--model", "../../testdata/hf/llama", "--format", "specforge", "--layers", "0,1,2", "--save-dtype", "f32", "--ids", ids, "--out", out}
		ext := ".ckpt"
		if gz {
			args, ext = append(args, "--compress"), ".ckpt.gz"
		}
		stdout, errs, code := runHsdb(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
		}
		if !strings.Contains(stdout, "specforge hidden_state = model.norm's output (final norm applied) = HF output_hidden_states[3]") {
			t.Errorf("output lacks the hidden_state mapping:\n%s", stdout)
		}
		off := 0
		for i, n := range lens {
			path := filepath.Join(out, "rows_0-2000", fmt.Sprintf("data_%d%s", i, ext))
			cf, err := check.ReadCaptureFile(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			get := func(k string) *tensor.Tensor {
				v := cf.Root.Get(k)
				if v == nil || v.Kind != check.KindTensor {
					t.Fatalf("%s: no tensor %s; structure:\n%s", path, k, strings.Join(cf.Structure(), "\n"))
				}
				return v.Tensor
			}
			in, mask, hs, aux := get("input_ids"), get("loss_mask"), get("hidden_state"), get("aux_hidden_state")
			if in.DType != tensor.I64 || mask.DType != tensor.I64 || fmt.Sprint(hs.Shape) != fmt.Sprintf("[1 %d 96]", n) || fmt.Sprint(aux.Shape) != fmt.Sprintf("[1 %d 288]", n) {
				t.Fatalf("%s: input_ids %s, loss_mask %s, hidden_state %v, aux_hidden_state %v", path, in.DType, mask.DType, hs.Shape, aux.Shape)
			}
			for j := range n {
				if mask.Int(j) != 1 {
					t.Fatalf("%s: loss_mask[%d] = %d; an input without one trains on every token", path, j, mask.Int(j))
				}
			}
			fin, _ := ref.RowsView("final_norm", off, off+n)
			if err := enginetest.CheckClose(hs.ToF32(), fin.ToF32(), 1e-5); err != nil {
				t.Errorf("%s hidden_state vs HF final_norm: %v", path, err)
			}
			for j := range 3 {
				want, _ := ref.RowsView(fmt.Sprintf("layer.%d", j), off, off+n)
				if err := enginetest.CheckClose(cols(aux, n, 288, j*96, 96), want.ToF32(), 1e-5); err != nil {
					t.Errorf("%s aux_hidden_state block %d vs HF layer.%d: %v", path, j, j, err)
				}
			}
			off += n
		}
	}
}

// TestCaptureFormatResume: a speculators job killed (SIGKILL) after its
// first batches resumes, keeping the files already validated (their
// sha256 recorded in the sidecar manifest's journal) and writing the rest.
func TestCaptureFormatResume(t *testing.T) {
	data := writeJSONL(t, 24)
	out := filepath.Join(t.TempDir(), "hs")
	args := []string{"capture", "--format", "speculators", "--layers", "1,3,5", "--data", data, "--out", out, "--max-batch-tokens", "40"}
	cmd, stderr := startCaptureHelper(t, args)
	sc := bufio.NewScanner(stderr)
	paused := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "HSDB-TEST-PAUSED") {
			paused = true
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !paused {
		t.Fatal("the helper never paused")
	}
	m, err := capture.ReadManifest(out + capture.PartialSuffix)
	if err != nil {
		t.Fatal(err)
	}
	kept := len(m.Sequences)
	if kept < 8 || kept == 24 {
		t.Fatalf("%d sequences validated before the kill", kept)
	}
	// A kept file changed on disk since (one byte of a hidden state) no
	// longer has its recorded sha256: the resume writes it again.
	bad := filepath.Join(out+capture.PartialSuffix, m.Sequences[0].File)
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	kept--
	stdout, errs, code := runHsdb(t, append(args, "--prefill-baseline", "2")...)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errs)
	}
	// bf16 by default: 3 ids × hidden 64 × 2 bytes + the 8-byte token id.
	for _, want := range []string{"disk: 392 bytes per token of tensors", "prefill baseline: ", "% of the prefill baseline"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("resume output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stdout, fmt.Sprintf("(%d skipped, already validated)", kept)) {
		t.Errorf("resume did not skip %d:\n%s", kept, stdout)
	}
	m, err = capture.ReadManifest(out)
	if err != nil || len(m.Sequences) != 24 || m.Capture.Format != "speculators" || m.Capture.DType != "BF16" {
		t.Fatalf("final manifest: %v, %+v", err, m)
	}
	if pr := check.CheckPath(out, check.CheckOptions{}); pr.Failed() {
		t.Errorf("check of the resumed samples:\n%s", strings.Join(pr.Lines(), "\n"))
	}
	for _, rec := range m.Sequences {
		if rec.File != fmt.Sprintf("hs_%d.safetensors", rec.Index) || rec.FileSHA256 == "" {
			t.Errorf("%s: file %s sha256 %q", rec.ID, rec.File, rec.FileSHA256)
		}
		if _, err := os.Stat(filepath.Join(out, rec.File)); err != nil {
			t.Error(err)
		}
	}
}
