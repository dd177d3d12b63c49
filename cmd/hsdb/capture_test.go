package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hsdb/engine/enginetest"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/safetensors"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
	hsdbg "hsdb/inspect/debug"
)

// writeJSONL writes n sequences of random token ids (PCG seed 7, lengths
// 3..20, ids in the embedded model's vocabulary [0, 512)); every third row
// carries a loss_mask (0 on its first two tokens).
func writeJSONL(t *testing.T, n int) string {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for i := range n {
		ids := make([]int, 3+r.IntN(18))
		for j := range ids {
			ids[j] = r.IntN(512)
		}
		row := map[string]any{"id": fmt.Sprintf("s%02d", i), "input_ids": ids}
		if i%3 == 0 {
			mask := make([]int, len(ids))
			for j := 2; j < len(mask); j++ {
				mask[j] = 1
			}
			row["loss_mask"] = mask
		}
		line, _ := json.Marshal(row)
		b.Write(line)
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startCaptureHelper starts TestCaptureHelperProcess running `hsdb
// args` (an `hsdb capture` that pauses after 8 batches) and returns the
// process and its stderr, where it says when it paused.
func startCaptureHelper(t *testing.T, args []string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	enc, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCaptureHelperProcess$")
	cmd.Env = append(os.Environ(), "HSDB_CAPTURE_HELPER=1", "HSDB_CAPTURE_ARGS="+string(enc))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

// TestCaptureHelperProcess is not a test: TestCaptureKillResume runs the
// test binary with HSDB_CAPTURE_HELPER=1 to get an `hsdb capture` process
// that stops after a few batches and waits to be killed.
func TestCaptureHelperProcess(t *testing.T) {
	if os.Getenv("HSDB_CAPTURE_HELPER") != "1" {
		t.Skip("helper process for TestCaptureKillResume")
	}
	var args []string
	json.Unmarshal([]byte(os.Getenv("HSDB_CAPTURE_ARGS")), &args)
	captureAfterBatch = func(done int) {
		if done >= 8 {
			fmt.Fprintf(os.Stderr, "HSDB-TEST-PAUSED %d\n", done)
			select {} // wait for SIGKILL
		}
	}
	os.Exit(hsdbMain(args, stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// TestCaptureKillResume: an `hsdb capture` process killed (SIGKILL) midway
// leaves no dump at --out, only OUT.partial with the batches it finished;
// the same command then skips those, cleans what a write cut short left
// behind, completes the dump and validates it; the values equal a capture
// of each sequence run alone.
func TestCaptureKillResume(t *testing.T) {
	data := writeJSONL(t, 24)
	out := filepath.Join(t.TempDir(), "dump")
	args := []string{"capture", "--layers", "1,3", "--data", data, "--out", out, "--max-batch-tokens", "40"}
	cmd, stderr := startCaptureHelper(t, args)
	done := -1
	sc := bufio.NewScanner(stderr)
	var log []string
	for sc.Scan() {
		log = append(log, sc.Text())
		if _, err := fmt.Sscanf(sc.Text(), "HSDB-TEST-PAUSED %d", &done); err == nil {
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if done < 8 {
		t.Fatalf("the helper never paused:\n%s", strings.Join(log, "\n"))
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a killed job left %s: %v", out, err)
	}
	m, err := capture.ReadManifest(out + capture.PartialSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete || len(m.Sequences) != done {
		t.Fatalf("staging manifest: complete %v, %d sequences, the job had done %d", m.Complete, len(m.Sequences), done)
	}
	// What a kill during a write leaves: safetensors.WriteFile's temporary
	// file, a file no journal line lists,
	stray := []string{".seq_000020.safetensors.tmp-123", "seq_000099.safetensors"}
	for _, s := range stray {
		if err := os.WriteFile(filepath.Join(out+capture.PartialSuffix, s), []byte("cut short"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// and a journal line cut short.
	j, err := os.OpenFile(filepath.Join(out+capture.PartialSuffix, capture.JournalName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	j.WriteString(`{"seq":{"id":"s20","index":20,"len`)
	j.Close()
	stdout, errs, code := runHsdb(t, args...)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errs)
	}
	if !strings.Contains(stdout, fmt.Sprintf("captured %d of 24 sequences (%d skipped, already validated)", 24-done, done)) {
		t.Fatalf("resume output:\n%s", stdout)
	}
	if _, err := os.Stat(out + capture.PartialSuffix); !os.IsNotExist(err) {
		t.Fatal("the staging directory is still there")
	}
	for _, s := range stray {
		if _, err := os.Stat(filepath.Join(out, s)); !os.IsNotExist(err) {
			t.Fatalf("%s survived the resume", s)
		}
	}
	m, err = capture.ReadManifest(out)
	if err != nil || !m.Complete || len(m.Sequences) != 24 {
		t.Fatalf("final manifest: %v %+v", err, m)
	}
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := hsdbg.NewLocal(hsdbg.New(e)).Check(out, client.CheckRequest{}); err != nil || rep.Failed {
		t.Fatalf("check of the resumed dump: %v\n%s", err, strings.Join(rep.Lines, "\n"))
	}
	// Each sequence alone through a fresh capturer gives the dumped rows.
	for _, rec := range m.Sequences {
		f, err := safetensors.Open(filepath.Join(out, rec.File))
		if err != nil {
			t.Fatal(err)
		}
		ids, _ := f.Tensor("input_ids")
		seq := make([]int32, ids.Numel())
		for i := range seq {
			seq[i] = int32(ids.Int(i))
		}
		c := capture.NewCapturer(e.Tree, e.Dims.Layers)
		c.AddLayers([]int{1, 3}, "")
		if _, err := e.Prefill([][]int32{seq}, c, false); err != nil {
			t.Fatal(err)
		}
		alone, _, err := c.Result()
		if err != nil || len(alone) != 1 {
			t.Fatalf("%s alone: %d sequences captured, %v", rec.ID, len(alone), err)
		}
		got, err := f.Tensor("hidden_states.3")
		if err != nil {
			t.Fatal(err)
		}
		if err := enginetest.CheckClose(got.F32(), alone[0].Tensors["hidden_states.3"].F32(), 1e-5); err != nil {
			t.Errorf("%s: batched vs alone %v", rec.ID, err)
		}
		_, hasMask := f.Info("loss_mask")
		if hasMask != rec.LossMask || hasMask != (rec.Index%3 == 0) {
			t.Errorf("%s: loss_mask in file %v, manifest %v", rec.ID, hasMask, rec.LossMask)
		}
		f.Close()
	}
	// The complete dump is not overwritten: the rerun verifies it and
	// says so, exit 0 (TestCaptureRerunComplete).
	stdout, errs, code = runHsdb(t, args...)
	if code != 0 || !strings.Contains(stdout, "dump "+out+": already complete and valid: the same job, 24 files verified") {
		t.Fatalf("rerun: exit %d\n%s%s", code, stdout, errs)
	}
}

// TestCaptureIDsHF: --ids on the HF llama fixture at --tp 2 writes the
// fixture's three sequences; hidden_states.0 of each equals HF's
// output_hidden_states[1] rows (reference.safetensors) within 1e-5, and
// the output reports throughput and the validation summary.
func TestCaptureIDsHF(t *testing.T) {
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ids, lens := fixtureIDs(t, ref)
	out := filepath.Join(t.TempDir(), "d")
	stdout, errs, code := runHsdb(t, "capture", "--model", "../../testdata/hf/llama", "--tp", "2", "--layers", "0,1", "--ids", ids, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	for _, want := range []string{"tokens/s", "pass  replicas equal", "pass  sequence count", "3 sequences"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(errs, "capture: 3/3 sequences") {
		t.Errorf("progress lines:\n%s", errs)
	}
	m, err := capture.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i, n := range lens {
		f, err := safetensors.Open(filepath.Join(out, m.Sequences[i].File))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := f.Tensor("hidden_states.0")
		want, _ := ref.RowsView("hf_hidden_states.1", off, off+n)
		if err := enginetest.CheckClose(got.F32(), want.ToF32(), 1e-5); err != nil {
			t.Errorf("sequence %d: %v from HF", i, err)
		}
		f.Close()
		off += n
	}
}

// TestCaptureErrors: usage errors exit 2 with one clear message. (The
// input cases give --layers 1: the default eagle3 does not fit the
// embedded model's 5 layers, and --layers is judged first.)
func TestCaptureErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "d")
	long := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(long, []byte("{\"input_ids\": [1, 2]}\n{\"input_ids\": ["+strings.Repeat("3, ", 599)+"3]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"capture", "--layers", "1", "--out", out}, 2, "one of --ids or --data"},
		{[]string{"capture", "--layers", "1", "--data", long, "--out", out}, 2, long + ":2 (sequence 1, id \"1\"): 600 tokens, more than max_position_embeddings 512"},
		{[]string{"capture", "--layers", "1,x", "--ids", "1,2", "--out", out}, 2, `layer "x"`},
		{[]string{"capture", "--layers", "9", "--ids", "1,2", "--out", out}, 2, "invalid capture request: --layers 9: hsdb layers are decoder layers 0..4"},
		{[]string{"capture", "--format", "eagle", "--ids", "1,2", "--out", out}, 2, `--format "eagle": want hsdb, speculators or specforge`},
		// The embedded model has 5 decoder layers: speculators ids run 0..5 (5 = the last layer's output), SGLang's 0..4.
		{[]string{"capture", "--format", "speculators", "--layers", "2,6", "--ids", "1,2", "--out", out}, 2, "--layers 6: speculators ids are residual-stream positions 0..5"},
		{[]string{"capture", "--format", "specforge", "--layers", "1,2,5", "--ids", "1,2", "--out", out}, 2, "--layers 5: SpecForge (SGLang) ids are decoder layers 0..4"},
		{[]string{"capture", "--format", "speculators", "--compress", "--ids", "1,2", "--out", out}, 2, "--compress: speculators files have no compressed form"},
		{[]string{"capture", "--format", "speculators", "--layers", "1,2", "--what", "residual", "--ids", "1,2", "--out", out}, 2, "--what residual: --format speculators files hold the residual stream"},
		// vocab_size 512, max_position_embeddings 512 (engine/stories/model/config.json).
		{[]string{"capture", "--layers", "1", "--ids", "1,2;3,512,4", "--out", out}, 2, "--ids: sequence 1: input_ids[1] = 512 is not a token id of the model (vocab_size 512)"},
		{[]string{"capture", "--layers", "1", "--ids", "1,2;" + strings.Repeat("7,", 512) + "7", "--out", out}, 2, "--ids: sequence 1: 513 tokens, more than max_position_embeddings 512"},
		{[]string{"capture", "--layers", "1", "--ids", "1,2;", "--out", out}, 2, "sequence 1 is empty"},
		{[]string{"capture", "--layers", "1", "--what", "mlp", "--ids", "1,2", "--out", out}, 2, `--what "mlp"`},
		// A negative count was taken as 0 (no baseline) without a word.
		{[]string{"capture", "--layers", "1", "--prefill-baseline", "-1", "--ids", "1,2", "--out", out}, 2, "--prefill-baseline -1: want a number of timed forward passes (0: none)"},
	} {
		_, errs, code := runHsdb(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want %d %q", c.args, code, errs, c.code, c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("a failed job left a dump")
	}
}
