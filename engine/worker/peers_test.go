package worker

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// peerFaultEnv makes a test's worker in slot 1 fail before its Nth
// all-reduce frame goes out to its peer ("die:N:MARKER" exits,
// "hang:N:MARKER" stops itself with SIGSTOP), once: the worker that
// creates MARKER fails, its replacement does not.
const peerFaultEnv = "HSDB_TEST_PEER_FAULT"

// peerFaultFromEnv sets beforePeerSend in a test's worker process as
// peerFaultEnv says.
func peerFaultFromEnv() {
	peerDelayFromEnv()
	v := os.Getenv(peerFaultEnv)
	if v == "" {
		return
	}
	parts := strings.SplitN(v, ":", 3)
	n, _ := strconv.Atoi(parts[1])
	sent := 0
	beforePeerSend = func(slot int, op byte) {
		if slot != 1 || op != peerReduce {
			return
		}
		if sent++; sent != n {
			return
		}
		f, err := os.OpenFile(parts[2], os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return // a replacement worker: runs as it should
		}
		f.Close()
		if parts[0] == "hang" {
			syscall.Kill(os.Getpid(), syscall.SIGSTOP) // the stop may take effect after Kill returns:
			select {}                                  // this rank goes no further meanwhile
		}
		os.Exit(3)
	}
}

// recordLayers prefills the HF llama fixture's sequences on e and
// returns every layer's stream on every rank.
func recordLayers(t *testing.T, e *engine.Engine) (*enginetest.Recorder, error) {
	t.Helper()
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	rec := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
	_, err = e.Prefill(enginetest.HFSeqs(t, ref), rec, true)
	return rec, err
}

// TestDirectLinksBitIdentical: at --tp 2 every layer's stream on every
// rank is bit for bit the in-process run's (cpu.Comm: the rank-ordered
// f32 sum), both with the workers' collectives over direct links — where
// no tensor crosses the front — and through the front's hub.
func TestDirectLinksBitIdentical(t *testing.T) {
	dir := "../../testdata/hf/llama"
	want := inProcessLayers(t, dir)
	for _, hub := range []bool{false, true} {
		e, f := openWorkers(t, dir, engine.Options{TP: 2}, Config{Hub: hub, Timeout: time.Minute})
		got, err := recordLayers(t, e)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Got) != e.Dims.Layers {
			t.Fatalf("in process: %d layers recorded, want %d", len(want.Got), e.Dims.Layers)
		}
		for k, w := range want.Got {
			g := got.Got[k]
			if len(g) != 2 || len(w) != 2 {
				t.Fatalf("hub %v: %s on %d ranks (in process %d), want 2", hub, k, len(g), len(w))
			}
			for r := range w {
				if len(w[r].Data) == 0 || !bytes.Equal(g[r].Data, w[r].Data) {
					t.Errorf("hub %v: rank %d %s differs from the in-process --tp 2 value", hub, r, k)
				}
			}
		}
		if n := f.hubbed.Load(); (n == 0) != !hub {
			t.Errorf("hub %v: %d tensors went through the front", hub, n)
		}
	}
}

// TestPeerRefusesStrangers: a worker's peer listener refuses a wrong
// token, a stale link generation, a slot that is not its peer, a slot
// that is linked already and a link meant for another slot, each with
// its reason; a dialer refuses an acceptor that answers as another slot;
// the session still runs afterwards.
func TestPeerRefusesStrangers(t *testing.T) {
	e, f := openWorkers(t, "", engine.Options{TP: 2}, Config{Token: "peer-token", Timeout: time.Minute})
	addr := f.slot(0).peerAddr
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("slot 0 listens for peers on %s, want loopback", addr)
	}
	for _, c := range []struct {
		token         string
		gen, from, to int
		want          string
	}{
		{"wrong-token", f.gen, 1, 0, "wrong token"},
		{"peer-token", f.gen + 1, 1, 0, "generation"},
		{"peer-token", f.gen, 5, 0, "does not link"},
		{"peer-token", f.gen, 0, 0, "does not link"},
		{"peer-token", f.gen, 1, 0, "linked already"},
		{"peer-token", f.gen, 1, 1, "does not link"},
	} {
		c2, err := dialPeer(addr, c.token, c.gen, c.from, c.to, 5*time.Second)
		if err == nil {
			c2.close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("token %q, generation %d, slot %d to %d: %v, want a refusal naming %q", c.token, c.gen, c.from, c.to, err, c.want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an acceptor with the token that answers as slot 3
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		c := newConn(nc)
		defer c.close()
		if _, _, err := c.recv(5 * time.Second); err != nil {
			return
		}
		var e enc
		(&peerHello{Version: Version, Token: "peer-token", Gen: 1, From: 3, To: 1}).enc(&e)
		c.send(kindPeerHello, &e)
		c.recv(5 * time.Second)
	}()
	if c, err := dialPeer(ln.Addr().String(), "peer-token", 1, 1, 0, 5*time.Second); err == nil || !strings.Contains(err.Error(), "is not slot 0") {
		if c != nil {
			c.close()
		}
		t.Errorf("an acceptor answering as slot 3: %v, want a refusal", err)
	}
	if _, err := e.Prefill([][]int32{{1, 2, 3}}, nil, true); err != nil {
		t.Errorf("a prefill after the refusals: %v", err)
	}
}

// TestPeerFailsMidCollective: the worker of rank 1 dies (exits) or hangs
// (SIGSTOP) in the middle of its fourth all-reduce, after rank 0 sent its
// part; the prefill ends in the worker-failed report naming rank 1 (died,
// or stopped answering within the front's timeout) and the last site it
// asked about — by hand, the all-reduces run in the embedding (vocab
// parallel), layer 0's o_proj and down_proj, then layer 1's o_proj, after
// the site model.layers.1.self_attn.attn — never in a hang or a report
// about rank 0; the next prefill
// starts a fresh worker, relinks and matches the in-process values.
func TestPeerFailsMidCollective(t *testing.T) {
	dir := "../../testdata/hf/llama"
	want := inProcessLayers(t, dir)
	for _, c := range []struct{ how, report string }{{"die", "the worker died"}, {"hang", "stopped answering"}} {
		t.Run(c.how, func(t *testing.T) {
			t.Setenv(peerFaultEnv, fmt.Sprintf("%s:4:%s", c.how, filepath.Join(t.TempDir(), "failed")))
			e, _ := openWorkers(t, dir, engine.Options{TP: 2}, Config{Timeout: 3 * time.Second})
			start := time.Now()
			_, err := recordLayers(t, e)
			if err == nil || !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1 ") ||
				!strings.Contains(err.Error(), c.report) || !strings.Contains(err.Error(), "model.layers.1.self_attn") {
				t.Fatalf("%s mid-collective: %v, want the worker-failed report of rank 1 (%s) at model.layers.1.self_attn", c.how, err, c.report)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the report took %s", d)
			}
			got, err := recordLayers(t, e)
			if err != nil {
				t.Fatalf("the prefill after the failure: %v", err)
			}
			for k, w := range want.Got {
				for r := range w {
					if g := got.Got[k]; len(g) != 2 || !bytes.Equal(g[r].Data, w[r].Data) {
						t.Errorf("after the failure: rank %d %s differs from the in-process --tp 2 value", r, k)
					}
				}
			}
		})
	}
}

// TestPeerDataRoundTrip: a peer frame's payload decodes to the step
// sequence, operation and tensors written (values by hand); every
// truncation and a count of tensors larger than the bytes left is an
// error.
func TestPeerDataRoundTrip(t *testing.T) {
	var e enc
	encPeerData(&e, 7, peerPipe, tensor.FromF32([]float32{1, -2}, 1, 2), tensor.FromF32([]float32{0.5, 3, 4}, 1, 3))
	b := e.bytes()
	f := decPeerData(&dec{b: b})
	if f.err != nil || f.seq != 7 || f.op != peerPipe || len(f.ts) != 2 {
		t.Fatalf("decoded seq %d op %d, %d tensors, error %v; want 7, %d, 2", f.seq, f.op, len(f.ts), f.err, peerPipe)
	}
	for i, want := range [][]float32{{1, -2}, {0.5, 3, 4}} {
		got := f.ts[i].F32()
		if len(got) != len(want) {
			t.Fatalf("tensor %d: %v, want %v", i, got, want)
		}
		for j := range want {
			if got[j] != want[j] {
				t.Errorf("tensor %d: %v, want %v", i, got, want)
			}
		}
	}
	for n := range len(b) {
		if f := decPeerData(&dec{b: b[:n]}); f.err == nil {
			t.Errorf("a payload cut to %d of %d bytes decoded without an error", n, len(b))
		}
	}
	var huge enc
	huge.i64(1)
	huge.u8(peerReduce)
	huge.u32(^uint32(0))
	if f := decPeerData(&dec{b: huge.b}); f.err == nil || len(f.ts) != 0 {
		t.Errorf("a count of 2^32-1 tensors in no bytes: %d tensors, error %v", len(f.ts), f.err)
	}
}

// inProcessLayers is recordLayers of dir opened in process at --tp 2: the
// reference the worker runs must equal.
func inProcessLayers(t *testing.T, dir string) *enginetest.Recorder {
	t.Helper()
	local, err := engine.Open(dir, engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	want, err := recordLayers(t, local)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Got) != local.Dims.Layers {
		t.Fatalf("in process: %d layer outputs recorded, want %d (comparisons over none would pass)", len(want.Got), local.Dims.Layers)
	}
	return want
}
