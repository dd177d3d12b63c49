package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
)

// TestMain lets the test binary serve as `hsdb worker`: --workers starts
// workers by running this executable with "worker" first.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(hsdbMain(os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
	os.Exit(m.Run())
}

// TestWorkersQuickstart: `hsdb --workers --tp 2 -x scripts/quickstart.hsdb`
// prints exactly what the same script prints with the ranks as goroutines
// (which TestQuickstartScript and the HF parity tests check): every
// statistic, gathered tensor, rank comparison, backtrace and the next
// tokens; also as JSON, and with the collectives over direct links
// between the workers (the default) or through the front
// (--worker-links hub); --worker-links with another value is refused.
func TestWorkersQuickstart(t *testing.T) {
	for _, extra := range [][]string{nil, {"--json"}} {
		args := append([]string{"--tp", "2", "-x", "../../scripts/quickstart.hsdb"}, extra...)
		code, want, errs := runWithStdin(args, "")
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		for _, links := range []string{"direct", "hub"} {
			code, got, errs := runWithStdin(append([]string{"--workers", "--worker-links", links}, args...), "")
			if code != 0 {
				t.Fatalf("--workers --worker-links %s %v: exit %d\n%s\n%s", links, args, code, got, errs)
			}
			if got != want {
				t.Errorf("--workers --worker-links %s %v prints otherwise:\n%s\nwithout --workers:\n%s", links, args, got, want)
			}
		}
		code, got, errs := runWithStdin(append([]string{"--workers"}, args...), "")
		if code != 0 {
			t.Fatalf("--workers %v: exit %d\n%s\n%s", args, code, got, errs)
		}
		end := "Finished: prefill"
		if extra != nil {
			end = `"kind":"done"`
		}
		if !strings.Contains(got, end) || !strings.Contains(got, "gathered") {
			t.Errorf("--workers %v: the script did not run to its end:\n%s", args, got)
		}
	}
}

// TestWorkerLinksFlag: --worker-links takes direct or hub only.
func TestWorkerLinksFlag(t *testing.T) {
	code, _, errs := runWithStdin([]string{"--workers", "--worker-links", "ring", "-x", "../../scripts/quickstart.hsdb"}, "")
	if code == 0 || !strings.Contains(errs, "--worker-links \"ring\": want direct or hub") {
		t.Errorf("--worker-links ring: exit %d, %q", code, errs)
	}
}

// TestWorkerFlags: `hsdb worker` without --connect, or with a front that
// is not there, fails with a message and its exit status.
func TestWorkerFlags(t *testing.T) {
	if code, _, errs := runWithStdin([]string{"worker"}, ""); code != 2 || !strings.Contains(errs, "--connect") {
		t.Errorf("hsdb worker: exit %d, %q", code, errs)
	}
	if code, _, errs := runWithStdin([]string{"worker", "--connect", "127.0.0.1:1", "--token", "t", "--dial-timeout", "1s"}, ""); code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("hsdb worker --connect to nothing: exit %d, %q", code, errs)
	}
}

// TestWorkerNoToken: `hsdb worker` with neither --token nor
// $HSDB_WORKER_TOKEN is a usage error naming both, before it dials; it
// dialled and the front refused it as "wrong token".
func TestWorkerNoToken(t *testing.T) {
	t.Setenv("HSDB_WORKER_TOKEN", "")
	code, _, errs := runWithStdin([]string{"worker", "--connect", "127.0.0.1:1", "--dial-timeout", "1s"}, "")
	if code != 2 || !strings.Contains(errs, "no session token: give --token T or $HSDB_WORKER_TOKEN") {
		t.Errorf("hsdb worker without a token: exit %d, %q", code, errs)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startListening runs hsdb with args (a front given --listen) on stdin in
// the background and waits for the worker command it prints; it returns
// the front's exit code channel and the command's address and token
// (m[1], m[2]).
func startListening(t *testing.T, args []string, stdin string, out *bytes.Buffer, errb *lockedBuffer) (chan int, []string) {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		done <- hsdbMain(args, stdio{In: strings.NewReader(stdin), Out: out, Err: errb})
	}()
	re := regexp.MustCompile(`hsdb worker --connect (\S+) --token (\S+)`)
	var m []string
	for i := 0; i < 500 && m == nil; i++ {
		m = re.FindStringSubmatch(errb.String())
		time.Sleep(10 * time.Millisecond)
	}
	if m == nil {
		t.Fatalf("the front printed no worker command:\n%s", errb.String())
	}
	return done, m
}

// TestListenWorkersJoin: `hsdb --listen 127.0.0.1:0 --tp 2` prints the
// command a launcher runs (address and token); two `hsdb worker --connect
// ADDR --token T` join, one with a wrong token first (refused, exit 1),
// and the quickstart prints what the in-process session prints.
func TestListenWorkersJoin(t *testing.T) {
	args := []string{"--tp", "2", "-x", "../../scripts/quickstart.hsdb"}
	_, want, _ := runWithStdin(args, "")
	var out bytes.Buffer
	var errb lockedBuffer
	done, m := startListening(t, append([]string{"--listen", "127.0.0.1:0"}, args...), "", &out, &errb)
	if !strings.HasPrefix(m[1], "127.0.0.1:") {
		t.Errorf("the front listens on %s", m[1])
	}
	if code, _, errs := runWithStdin([]string{"worker", "--connect", m[1], "--token", "not-" + m[2]}, ""); code != 1 || !strings.Contains(errs, "wrong token") {
		t.Errorf("a worker with a wrong token: exit %d, %q", code, errs)
	}
	workers := make(chan int, 2)
	for range 2 {
		go func() {
			code, _, _ := runWithStdin([]string{"worker", "--connect", m[1], "--token", m[2]}, "")
			workers <- code
		}()
	}
	if code := <-done; code != 0 {
		t.Fatalf("the front: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if out.String() != want {
		t.Errorf("with joined workers:\n%s\nin process:\n%s", out.String(), want)
	}
	for range 2 {
		if code := <-workers; code != 0 {
			t.Errorf("a worker ended with exit %d", code)
		}
	}
}

// TestPipelineBreakAndCapture: `hsdb --listen 127.0.0.1:0 --pp 2 --tp 2`
// with four `hsdb worker --connect` (stories260K: layers 0-2 in stage 0,
// 3-4 in stage 1) stops at a breakpoint in the second stage (bt names the
// stage's devices), and the dump of a first-stage and a second-stage
// layer equals the one an in-process --tp 1 session writes within 1e-5.
func TestPipelineBreakAndCapture(t *testing.T) {
	script := func(dir string) string {
		return "input ids 1,403,407,261,378,365 ; ids 1,400,281,350\nbreak layers.4\ncapture layers 1,4\nrun\nbt\nprint stream\ncontinue\ndump " + dir + "\n"
	}
	tmp := t.TempDir()
	one, pp := filepath.Join(tmp, "tp1"), filepath.Join(tmp, "pp2")
	if code, out, errs := runWithStdin([]string{"--tp", "1"}, script(one)); code != 0 {
		t.Fatalf("--tp 1: exit %d\n%s\n%s", code, out, errs)
	}
	var out bytes.Buffer
	var errb lockedBuffer
	done, m := startListening(t, []string{"--listen", "127.0.0.1:0", "--pp", "2", "--tp", "2"}, script(pp), &out, &errb)
	for range 4 {
		go runWithStdin([]string{"worker", "--connect", m[1], "--token", m[2]}, "")
	}
	if code := <-done; code != 0 {
		t.Fatalf("--pp 2 --tp 2: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, w := range []string{"Stopped at model.layers.4 (LlamaDecoderLayer)", "on: cpu:2 (stage 1), cpu:3 (stage 1)", "Finished: prefill"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("--pp 2 output lacks %q:\n%s", w, out.String())
		}
	}
	files, _ := filepath.Glob(filepath.Join(one, "*.safetensors"))
	if len(files) != 2 {
		t.Fatalf("the --tp 1 dump holds %d files, want 2", len(files))
	}
	for _, fa := range files {
		a, err := safetensors.Open(fa)
		if err != nil {
			t.Fatal(err)
		}
		b, err := safetensors.Open(filepath.Join(pp, filepath.Base(fa)))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"hidden_states.1", "hidden_states.4"} {
			x, err1 := a.Tensor(k)
			y, err2 := b.Tensor(k)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s %s: %v %v", filepath.Base(fa), k, err1, err2)
			}
			if err := enginetest.CheckClose(y.ToF32(), x.ToF32(), 1e-5); err != nil {
				t.Errorf("%s %s: --pp 2 --tp 2 vs --tp 1: %v", filepath.Base(fa), k, err)
			}
		}
		a.Close()
		b.Close()
	}
}

// TestWorkersDecode: decode steps through workers (each worker keeps its
// rank's KV cache) print what the in-process ranks print — the generated
// tokens, a conditional breakpoint in a decode step and its statistics —
// with --workers and with --workers --pp 2 (whose memory lines differ:
// every stage holds the embeddings and the head).
func TestWorkersDecode(t *testing.T) {
	script := "input ids 1,403,407,261,378,365 ; ids 1,400,281,350\nrun\ngen 5\nbreak layers.1 if step == 7\ngen 3\nprint stream\ncontinue\n"
	_, want, _ := runWithStdin([]string{"--tp", "2"}, script)
	if !strings.Contains(want, "Finished: 3 decode steps") || !strings.Contains(want, "step 7 (decode)") {
		t.Fatalf("the in-process session did not decode:\n%s", want)
	}
	for _, extra := range [][]string{{"--workers"}, {"--workers", "--pp", "2"}} {
		code, got, errs := runWithStdin(append(extra, "--tp", "2"), script)
		if code != 0 || got != want {
			t.Errorf("%v: exit %d\n%s\n%s\nin process:\n%s", extra, code, got, errs, want)
		}
	}
}

// TestWorkersInterventions: the stop-time views and edits print through
// workers what they print in process — attention probabilities, frames
// and their inputs, a dump, patch and compare against it, save, and a
// persistent set var whose write the worker makes into its live tensor —
// and the saved file is byte-for-byte the same.
func TestWorkersInterventions(t *testing.T) {
	script := func(dir string) string {
		return strings.ReplaceAll(`input ids 1,403,407,261,378,365 ; ids 1,400,281,350
capture layers 1,3
break layers.2.self_attn.attn
run
print attn_probs --head 1 --seq 1
frame 1
print input --rank 1
up
bt
continue
dump DIR/dump
delete
break layers.3
run
patch stream from DIR/dump
compare DIR/dump
save stream DIR/stream.npy --rank 1
set var stream[0:2, 0:4] = 1 --persist
set var hidden_states[5, :] = 0 --rank 1
ranks hidden_states
info edits
continue
`, "DIR", dir)
	}
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, want, errs := runWithStdin([]string{"--tp", "2"}, script(a))
	if code != 0 {
		t.Fatalf("in process: exit %d\n%s\n%s", code, want, errs)
	}
	code, got, errs := runWithStdin([]string{"--workers", "--tp", "2"}, script(b))
	if code != 0 {
		t.Fatalf("--workers: exit %d\n%s\n%s", code, got, errs)
	}
	if strings.ReplaceAll(got, b, a) != want {
		t.Errorf("--workers:\n%s\nin process:\n%s", got, want)
	}
	for _, w := range []string{"query\\key", "edit 2: model.layers.3 stream[0:2, 0:4] = 1", "diverged"} {
		if !strings.Contains(got, w) {
			t.Errorf("the output lacks %q", w)
		}
	}
	x, err1 := os.ReadFile(filepath.Join(a, "stream.npy"))
	y, err2 := os.ReadFile(filepath.Join(b, "stream.npy"))
	if err1 != nil || err2 != nil || !bytes.Equal(x, y) || len(x) < 10*64*4 {
		t.Errorf("saved stream: %d and %d bytes (%v %v), want the same", len(x), len(y), err1, err2)
	}
}

// TestWorkersCaptureJob: `hsdb capture --workers` writes the same bytes
// as the in-process capture job (itself checked against HF in
// inspect/capture's tests).
func TestWorkersCaptureJob(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []struct {
		dir   string
		extra []string
	}{{"a", nil}, {"b", []string{"--workers"}}, {"c", []string{"--workers", "--pp", "2"}}} {
		args := append([]string{"capture", "--tp", "2", "--layers", "1,3", "--ids", "1,403,407;1,400,281,350", "--out", filepath.Join(tmp, c.dir)}, c.extra...)
		if code, out, errs := runWithStdin(args, ""); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
	}
	for _, f := range []string{"seq_000000.safetensors", "seq_000001.safetensors"} {
		a, err := os.ReadFile(filepath.Join(tmp, "a", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"b", "c"} {
			b, err := os.ReadFile(filepath.Join(tmp, d, f))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s/%s differs from the in-process capture (%v)", d, f, err)
			}
		}
	}
}

// TestWorkersLens: `lens` through worker processes — each rank's final
// norm and lm_head applied in its worker; with --pp 2 a stop at layer 1,
// in stage 0, which holds no head, sends the rows to the rank's last-stage
// worker — prints exactly what the in-process ranks print, at a middle
// layer and at the last layer (where the lens is the model's own
// next-token distribution, which intervene_test checks against the
// logits).
func TestWorkersLens(t *testing.T) {
	script := filepath.Join(t.TempDir(), "lens.hsdb")
	if err := os.WriteFile(script, []byte("input ids 1,403,407,261,378,365 ; ids 1,400,281,350\nbreak layers.1\nbreak layers.4\nrun\nlens 4\ncontinue\nlens 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, want, errs := runWithStdin([]string{"--tp", "2", "-x", script}, "")
	if code != 0 || strings.Count(want, "stream → norm → lm_head") != 2 {
		t.Fatalf("in process: exit %d\n%s\n%s", code, want, errs)
	}
	for _, extra := range [][]string{{"--workers"}, {"--workers", "--pp", "2"}} {
		code, got, errs := runWithStdin(append(extra, "--tp", "2", "-x", script), "")
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", extra, code, got, errs)
		}
		if got != want {
			t.Errorf("%v prints otherwise:\n%s\nin process:\n%s", extra, got, want)
		}
	}
}

// workersFeatures drives the debugger's features whose sites the front's
// site filter must name for the workers (model.SiteFilter): a conditional
// breakpoint, a temporary one, a watch, a display, until, next, finish, an
// edit kept for later steps, lens, an injected fault and decode steps.
const workersFeatures = `input ids 1,403,407,261,378,365 ; ids 1,400,281,350
break layers.1 if absmax(stream) > 0 && rank == 1
tbreak layers.3.mlp.down_proj
watch stream absmax > 1e9
display stream
run
continue
print output
until layers.4.self_attn
bt
info ranks
next
finish
set var stream[0, 0:4] = 0 --persist
lens 3
inject skip-allreduce at layers.4.mlp.down_proj
continue
gen 2
`

// TestWorkersDebuggerFeatures: the script above prints exactly the same
// with --workers (workers that ask the front only at the sites the
// debugger may want) as with the ranks as goroutines (every rank asked at
// every site), stop for stop and number for number.
func TestWorkersDebuggerFeatures(t *testing.T) {
	script := filepath.Join(t.TempDir(), "features.hsdb")
	if err := os.WriteFile(script, []byte(workersFeatures), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--tp", "2", "-x", script}
	code, want, errs := runWithStdin(args, "")
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s\n%s", args, code, want, errs)
	}
	code, got, errs := runWithStdin(append([]string{"--workers"}, args...), "")
	if code != 0 {
		t.Fatalf("--workers %v: exit %d\n%s\n%s", args, code, got, errs)
	}
	// `info ranks` also lists each rank's worker process under the rank:
	// one line per rank, the rest as in process.
	workerLine := regexp.MustCompile(`(?m)^  worker pid \d+ on \S+: at a stop at model\.layers\.4\.self_attn\n`)
	if n, lines := len(workerLine.FindAllString(got, -1)), 2*strings.Count(workersFeatures, "info ranks"); n != lines || lines == 0 {
		t.Errorf("--workers: %d worker lines in `info ranks`, want %d (one per rank):\n%s", n, lines, got)
	}
	got = workerLine.ReplaceAllString(got, "")
	if got != want {
		t.Errorf("--workers prints otherwise:\n%s\nwithout --workers:\n%s", got, want)
	}
	for _, w := range []string{"[breakpoint 1 (absmax(stream) > 0 && rank == 1: true on rank 1)]", "[breakpoint 2]", "[until layers.4.self_attn]",
		"[next]", "[finish model.layers.4]", "stream → norm → lm_head", "Finished: prefill", "step 1 (decode)", "INJECTED FAULTS"} {
		if !strings.Contains(got, w) {
			t.Errorf("the script's output lacks %q:\n%s", w, got)
		}
	}
}

// TestWorkerBinNotExecutable: --worker-bin naming a directory or a file
// without execute permission is refused saying which, not as exec's
// "permission denied" for both: a usage error (exit 2), said before the
// model is read, as a missing --worker-bin (TestInputPathsExit2).
func TestWorkerBinNotExecutable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hsdb")
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for bin, want := range map[string]string{
		dir:  dir + " is a directory: --worker-bin names the worker's binary",
		file: file + " is not executable (mode -rw-r--r--): --worker-bin names the worker's binary",
	} {
		code, _, errs := runWithStdin([]string{"--workers", "--tp", "2", "--worker-bin", bin, "-x", "../../scripts/quickstart.hsdb"}, "")
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("--worker-bin %s: exit %d, %q, want 2 and %q", bin, code, errs, want)
		}
	}
}
