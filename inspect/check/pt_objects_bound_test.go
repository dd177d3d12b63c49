package check

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
)

// torchSaveDict returns a data.pkl as torch.save writes a dict of n
// tensors {"t0": x, "t1": x, ...}, each a [1] float32 view of storage "0"
// (_rebuild_tensor_v2(persistent_load(("storage", FloatStorage, "0",
// "cpu", 1)), 0, (1,), (1,), False, OrderedDict())), the items set in
// batches of 1000 as Python's pickler does. The globals are named anew
// for each tensor (torch.save fetches them from its memo), which creates
// 20 objects per tensor.
func torchSaveDict(n int) string {
	var p bytes.Buffer
	str := func(s string) {
		p.WriteByte('X')
		binary.Write(&p, binary.LittleEndian, uint32(len(s)))
		p.WriteString(s)
	}
	p.WriteString("\x80\x02}")
	for i := range n {
		if i%1000 == 0 {
			p.WriteByte('(')
		}
		str(fmt.Sprintf("t%d", i))
		p.WriteString("ctorch._utils\n_rebuild_tensor_v2\n(")
		p.WriteByte('(')
		str("storage")
		p.WriteString("ctorch\nFloatStorage\n")
		str("0")
		str("cpu")
		p.WriteString("K\x01tQ")                         // numel 1, the persistent id, BINPERSID
		p.WriteString("K\x00K\x01\x85K\x01\x85\x89")     // offset 0, size (1,), stride (1,), False
		p.WriteString("ccollections\nOrderedDict\n)RtR") // OrderedDict(), the args tuple, the call
		if i%1000 == 999 || i == n-1 {
			p.WriteByte('u')
		}
	}
	p.WriteByte('.')
	return p.String()
}

// TestPickleObjectsBounded: a data.pkl of 60 MB whose opcodes only create
// objects and keep them (a MARK, then "]" sixty million times: sixty
// million empty lists on the unpickler's stack) took gigabytes of memory
// within seconds, before MaxUnpickleTime stopped it (1.9 GB in 13 MB of
// it on a loaded host), since MaxPickleValues looks only at the finished
// tree. The scan that names the globals now counts the objects the
// opcodes create and refuses the file past MaxPickleObjects, before
// anything is unpickled; a torch.save dict of 150,000 tensors (20 objects
// each, 3 million) is still read.
func TestPickleObjectsBounded(t *testing.T) {
	storage := make([]byte, 4)
	binary.LittleEndian.PutUint32(storage, math.Float32bits(1.5))

	const n = 150_000
	cf, err := ReadTorch(writeTorchZip(t, "many", torchSaveDict(n), map[string][]byte{"0": storage}))
	if err != nil {
		t.Fatalf("a dict of %d tensors: %v", n, err)
	}
	if got := len(cf.Root.Keys); got != n {
		t.Fatalf("a dict of %d tensors read as %d entries", n, got)
	}
	if x := cf.Root.Get("t149999"); x == nil || x.Tensor == nil || x.Tensor.F32()[0] != 1.5 {
		t.Fatalf("t149999 = %+v, want the [1] tensor 1.5", x)
	}

	lists := "\x80\x02(" + strings.Repeat("]", MaxPickleObjects+1) + "l."
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = ReadTorch(writeTorchZip(t, "lists", lists, nil))
	runtime.ReadMemStats(&after)
	wantLimit(t, err, "lists.pt", "data.pkl creates more than 4194304 objects")
	// The archive (4 MB) is read once; unpickling the lists took about
	// 40 bytes each, 170 MB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("refusing %d empty lists allocated %d bytes, want under 32 MiB", MaxPickleObjects+1, got)
	}
}
