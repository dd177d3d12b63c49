package worker

import (
	"net"
	"testing"

	"hsdb/engine/tensor"
)

// BenchmarkReplyLogits measures the end of a step through a worker: a
// done message holding logits [4, 128256] f32 (2 MiB, a Llama-3 prefill of
// 4 sequences) encoded, sent over loopback TCP, received and decoded —
// the cost the process boundary adds to every step (with the trace of
// TestCUDAWorkersPrefill8B):
//
//	go test ./engine/worker -run '^$' -bench ReplyLogits
func BenchmarkReplyLogits(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	tx, rx := newConn(nc), newConn(<-acc)
	defer tx.close()
	defer rx.close()
	rx.limit = maxFrame
	logits := tensor.New(tensor.F32, 4, 128256)
	for i := range logits.Data {
		logits.Data[i] = byte(i)
	}
	b.SetBytes(int64(len(logits.Data)))
	errs := make(chan error, 1)
	go func() {
		for range b.N {
			var e enc
			(&done{Logits: logits}).enc(&e)
			if err := tx.send(kindDone, &e); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range b.N {
		_, d, err := rx.recv(-1)
		if err != nil {
			b.Fatal(err)
		}
		var m done
		if err := m.dec(d); err != nil || len(m.Logits.Data) != len(logits.Data) {
			b.Fatalf("%v", err)
		}
	}
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
