package worker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net"
	"strings"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// validMessages are encodings of every message a peer decodes, the seeds
// of the decoding tests.
func validMessages() [][]byte {
	var out [][]byte
	add := func(f func(e *enc)) {
		var e enc
		f(&e)
		out = append(out, e.bytes())
	}
	add(func(e *enc) { (&hello{Version: Version, Token: "t", Host: "h", PID: 7, Rank: -1}).enc(e) })
	add(func(e *enc) { (&assign{Rank: 1, World: 2, Stages: 1, Model: "m", Layers: "0-1"}).enc(e) })
	add(func(e *enc) {
		(&loaded{Device: "cpu:1", ActDType: tensor.F32, Report: model.LoadReport{Unused: []string{"x"}}, Sites: []string{"lm_head"}}).enc(e)
	})
	add(func(e *enc) {
		encBatch(e, &model.Batch{IDs: []int32{1, 2}, Pos: []int32{0, 1}, SeqLens: []int{2}, Seqs: []int{0}, Slots: []int{0}})
	})
	add(func(e *enc) {
		(&visit{Site: "model.layers.0", Tensors: []siteTensor{{Name: "h", Shape: []int{2, 3}, DType: tensor.F32, Writable: true, SumOf: []string{"a", "b"}},
			{Name: "q", Shape: []int{2, 8}, DType: tensor.F32, Attn: &model.AttnGeometry{Key: "k", Heads: 2, KVHeads: 1, DK: 4, TotalHeads: 4, TotalKVHeads: 2, Scale: 0.5}},
			{Name: "ids", Shape: []int{2, 1}, Host: tensor.FromI64([]int64{3, 4}, 2, 1)}},
			Frames: []visitFrame{{Site: "model", Inputs: [][]int{{2, 3}}, InDTypes: []tensor.DType{tensor.F32}}}}).enc(e)
	})
	add(func(e *enc) { (&done{Logits: tensor.FromF32([]float32{1, 2}, 1, 2)}).enc(e) })
	add(func(e *enc) { region{T: 1, R0: 0, R1: 2, C0: 0, C1: 3}.enc(e) })
	add(func(e *enc) { encFilter(e, 3, []bool{true, false, true}) })
	add(func(e *enc) { (&peerHello{Version: Version, Token: "t", Gen: 2, From: 3, To: 1}).enc(e) })
	add(func(e *enc) { encPeerList(e, 2, time.Minute, []string{"127.0.0.1:1", "127.0.0.1:2"}) })
	add(func(e *enc) {
		encPeerData(e, 5, peerPipe, tensor.FromF32([]float32{1, 2}, 1, 2), tensor.FromF32([]float32{3, 4, 5}, 1, 3))
	})
	return out
}

// bytes returns e's payload as one slice.
func (e *enc) bytes() []byte {
	var out []byte
	for _, p := range e.parts {
		out = append(out, p...)
	}
	return append(out, e.b...)
}

// decodeAll runs every decoder on b; none may panic.
func decodeAll(b []byte) {
	var h hello
	h.dec(&dec{b: b})
	var a assign
	a.dec(&dec{b: b})
	var l loaded
	l.dec(&dec{b: b})
	decBatch(&dec{b: b})
	var v visit
	v.dec(&dec{b: b})
	var m done
	m.dec(&dec{b: b})
	var r region
	r.dec(&dec{b: b})
	(&dec{b: b}).tensor()
	decFilter(&dec{b: b})
	var ph peerHello
	ph.dec(&dec{b: b})
	decPeerList(&dec{b: b})
	decPeerData(&dec{b: b})
}

// TestDecodeNeverPanics: every decoder, on every truncation of a valid
// message and on 3000 random mutations, returns an error or a value and
// never panics or allocates past the input (a count larger than the bytes
// left is an error before any allocation); a truncated message is an
// error.
func TestDecodeNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, m := range validMessages() {
		for n := range len(m) {
			decodeAll(m[:n])
		}
		for range 3000 / len(validMessages()) {
			b := append([]byte(nil), m...)
			for range 1 + rng.Intn(4) {
				b[rng.Intn(len(b))] = byte(rng.Intn(256))
			}
			decodeAll(b)
		}
	}
	var v visit
	m := validMessages()[4]
	if err := v.dec(&dec{b: m[:len(m)-1]}); err == nil {
		t.Error("a truncated visit decoded without an error")
	}
	// a count of 2^32-1 strings in a few bytes is refused
	var e enc
	e.u32(^uint32(0))
	d := &dec{b: e.b}
	if s := d.strs(); d.err == nil || len(s) != 0 {
		t.Errorf("a huge count: %d strings, error %v", len(s), d.err)
	}
}

// FuzzDecode is TestDecodeNeverPanics under the fuzzer:
//
//	go test ./engine/worker -fuzz FuzzDecode
func FuzzDecode(f *testing.F) {
	for _, m := range validMessages() {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, b []byte) { decodeAll(b) })
}

// TestFrontRefusesGarbage: connections that send no hello, a frame larger
// than a hello may be, or random bytes are closed, and the front then
// takes a real worker.
func TestFrontRefusesGarbage(t *testing.T) {
	cfg := Config{Token: "tok", Timeout: 20 * time.Second}
	addr, started := startListening(t, engine.DefaultModelPath, engine.Options{TP: 1}, cfg)
	var huge [5]byte
	binary.LittleEndian.PutUint32(huge[:4], 1<<31)
	huge[4] = kindHello
	for _, junk := range [][]byte{huge[:], []byte("GET / HTTP/1.1\r\n\r\n"), bytes.Repeat([]byte{0xff}, 64)} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(junk)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Errorf("the front kept a connection that sent %q open", junk[:min(len(junk), 8)])
				}
				break
			}
		}
		c.Close()
	}
	served := make(chan error, 1)
	go func() { served <- Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: -1}) }()
	r := <-started
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.f.Close()
	if err := <-served; err != nil && !strings.Contains(err.Error(), "closed") {
		t.Errorf("the worker: %v", err)
	}
}

// TestLargeTensorsByReference: a frame whose tensors are large enough to
// be written from where they lie (enc.tensor, bigData) arrives whole — two
// such tensors and a small field between them, as a pipeline stage's send
// has — with every byte, dtype and shape as sent.
func TestLargeTensorsByReference(t *testing.T) {
	a, b := net.Pipe()
	tx, rx := newConn(a), newConn(b)
	defer tx.close()
	defer rx.close()
	rx.limit = maxFrame
	h := tensor.New(tensor.F32, 100, 200) // 80,000 bytes
	res := tensor.New(tensor.F32, 3, 5)   // small: copied
	big2 := tensor.New(tensor.F32, 50, 333)
	for i := range h.Data {
		h.Data[i] = byte(i * 7)
	}
	for i := range res.Data {
		res.Data[i] = byte(i + 1)
	}
	for i := range big2.Data {
		big2.Data[i] = byte(i * 13)
	}
	var e enc
	e.tensor(h)
	e.str("between")
	e.tensor(res)
	e.tensor(big2)
	if e.parts == nil {
		t.Fatal("a large tensor was copied into the payload")
	}
	go tx.send(kindPipeSend, &e)
	k, d, err := rx.recv(time.Minute)
	if err != nil || k != kindPipeSend {
		t.Fatalf("recv: kind %d, %v", k, err)
	}
	gh, s, gr, g2 := d.tensor(), d.str(), d.tensor(), d.tensor()
	if d.err != nil || s != "between" || len(d.b) != 0 {
		t.Fatalf("decode: %v, %q, %d bytes left", d.err, s, len(d.b))
	}
	for i, p := range [][2]*tensor.Tensor{{gh, h}, {gr, res}, {g2, big2}} {
		if p[0].DType != p[1].DType || fmt.Sprint(p[0].Shape) != fmt.Sprint(p[1].Shape) || !bytes.Equal(p[0].Data, p[1].Data) {
			t.Errorf("tensor %d: got %s %v, sent %s %v (bytes equal: %v)", i, p[0].DType, p[0].Shape, p[1].DType, p[1].Shape, bytes.Equal(p[0].Data, p[1].Data))
		}
	}
}
