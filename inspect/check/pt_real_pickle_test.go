package check

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"testing"

	"hsdb/engine/tensor"
)

// torchPickler writes data.pkl the way Python's pickle.Pickler does for
// torch.save (torch/serialization.py _save: a Pickler with persistent_id
// for storages), at protocol 2 (torch's DEFAULT_PROTOCOL) or 4: every
// string, tuple, global and reduce result is memoized (BINPUT below 256,
// LONG_BINPUT from 256; MEMOIZE at 4), a value met again is a memo get
// (BINGET / LONG_BINGET), dict items go in batches of 1000
// (Pickler._BATCHSIZE: MARK ... SETITEMS, one item alone SETITEM), a
// global is GLOBAL at 2 and SHORT_BINUNICODE ×2 + STACK_GLOBAL at 4, and
// protocol 4 frames the stream (FRAME before each 64 KiB chunk).
type torchPickler struct {
	proto int
	out   []byte
	memo  map[string]int // what -> memo index, for values pickled again
	next  int
}

func (p *torchPickler) op(b ...byte) { p.out = append(p.out, b...) }

func (p *torchPickler) put() int {
	i := p.next
	p.next++
	switch {
	case p.proto >= 4:
		p.op(0x94) // MEMOIZE
	case i < 256:
		p.op('q', byte(i))
	default:
		p.op('r')
		p.out = binary.LittleEndian.AppendUint32(p.out, uint32(i))
	}
	return i
}

func (p *torchPickler) get(i int) {
	if i < 256 {
		p.op('h', byte(i))
		return
	}
	p.op('j')
	p.out = binary.LittleEndian.AppendUint32(p.out, uint32(i))
}

// memoized pickles what once (emit) and later as a memo get.
func (p *torchPickler) memoized(key string, emit func()) {
	if i, ok := p.memo[key]; ok {
		p.get(i)
		return
	}
	emit()
	p.memo[key] = p.put()
}

func (p *torchPickler) str(s string) {
	if p.proto >= 4 && len(s) < 256 {
		p.op(0x8c, byte(len(s))) // SHORT_BINUNICODE
	} else {
		p.op('X')
		p.out = binary.LittleEndian.AppendUint32(p.out, uint32(len(s)))
	}
	p.out = append(p.out, s...)
}

func (p *torchPickler) global(mod, name string) {
	p.memoized("global "+mod+"."+name, func() {
		if p.proto >= 4 {
			p.memoized("str "+mod, func() { p.str(mod) })
			p.memoized("str "+name, func() { p.str(name) })
			p.op(0x93) // STACK_GLOBAL
			return
		}
		p.op('c')
		p.out = append(p.out, mod+"\n"+name+"\n"...)
	})
}

func (p *torchPickler) int(n int) {
	switch {
	case n >= 0 && n < 256:
		p.op('K', byte(n))
	case n >= 0 && n < 65536:
		p.op('M', byte(n), byte(n>>8))
	default:
		p.op('J')
		p.out = binary.LittleEndian.AppendUint32(p.out, uint32(int32(n)))
	}
}

// intTuple is save_tuple: TUPLE1..3 for short tuples, else MARK ... TUPLE;
// the empty tuple is EMPTY_TUPLE and not memoized.
func (p *torchPickler) intTuple(xs []int) {
	if len(xs) == 0 {
		p.op(')')
		return
	}
	if len(xs) > 3 {
		p.op('(')
	}
	for _, x := range xs {
		p.int(x)
	}
	if len(xs) > 3 {
		p.op('t')
	} else {
		p.op(0x84 + byte(len(xs))) // TUPLE1..3
	}
	p.put()
}

// emptyOrderedDict is OrderedDict(): its __reduce__ is (OrderedDict, ()).
func (p *torchPickler) emptyOrderedDict() {
	p.global("collections", "OrderedDict")
	p.op(')', 'R')
	p.put()
}

// tensorV2 pickles tensor.__reduce_ex__: _rebuild_tensor_v2(storage,
// storage_offset, size, stride, requires_grad, OrderedDict()), the storage
// by persistent id ('storage', torch.FloatStorage, key, 'cpu', numel).
func (p *torchPickler) tensorV2(key string, numel, offset int, size, stride []int) (memo int) {
	p.global("torch._utils", "_rebuild_tensor_v2")
	p.op('(')
	p.op('(')
	p.memoized("str storage", func() { p.str("storage") })
	p.global("torch", "FloatStorage")
	p.str(key)
	p.put()
	p.memoized("str cpu", func() { p.str("cpu") })
	p.int(numel)
	p.op('t')
	p.put()
	p.op('Q') // BINPERSID
	p.int(offset)
	p.intTuple(size)
	p.intTuple(stride)
	p.op(0x89) // False
	p.emptyOrderedDict()
	p.op('t')
	p.put()
	p.op('R')
	return p.put()
}

// framed splits a protocol-4 body into FRAMEs as pickle's _Framer does
// (a frame is closed once it reaches 64 KiB, at an opcode boundary; here
// at the boundaries the test marks).
func framed(header []byte, chunks [][]byte) []byte {
	out := append([]byte(nil), header...)
	for _, c := range chunks {
		out = append(out, 0x95)
		out = binary.LittleEndian.AppendUint64(out, uint64(len(c)))
		out = append(out, c...)
	}
	return out
}

// TestReadTorchRealStateDict: a torch.save(state_dict) of 2,500 tensors
// one nn.Parameter and one tied weight, its data.pkl written opcode for opcode as Python's
// Pickler writes it at protocol 2 (torch's default) and at protocol 4
// (pickle_protocol=4: FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL).
// The object and stack-frame scans of left18 must take every opcode:
// OrderedDict by REDUCE with SETITEMS batches of 1000 then a lone
// SETITEM, BUILD of its _metadata state, BINPERSID, BINGET and (past 256
// memo entries) LONG_BINPUT and LONG_BINGET (a tied weight: the same
// tensor twice), TUPLE1-3, _rebuild_parameter.
// Tensor k holds storage "k" of [k, k+0.5, k+1, ...] viewed as [2, 3];
// the parameter is [[7, 8], [9, 10]] — read back exactly.
func TestReadTorchRealStateDict(t *testing.T) {
	const n = 2500
	storages := map[string][]byte{}
	for k := range n {
		v := make([]float32, 6)
		for i := range v {
			v[i] = float32(k) + 0.5*float32(i)
		}
		storages[fmt.Sprint(k)] = tensor.FromF32(v, 6).Data
	}
	storages["param"] = tensor.FromF32([]float32{7, 8, 9, 10}, 4).Data
	for _, proto := range []int{2, 4} {
		t.Run(fmt.Sprintf("protocol%d", proto), func(t *testing.T) {
			p := &torchPickler{proto: proto, memo: map[string]int{}}
			p.global("collections", "OrderedDict")
			p.op(')', 'R')
			p.put()
			tensorMemo := map[int]int{}
			item := func(k int) {
				p.str(fmt.Sprintf("model.layers.%d.weight", k))
				p.put()
				tensorMemo[k] = p.tensorV2(fmt.Sprint(k), 6, 0, []int{2, 3}, []int{3, 1})
			}
			var chunks [][]byte // protocol 4: frame boundaries after each batch
			cut := func() { chunks = append(chunks, p.out); p.out = nil }
			header := []byte{0x80, byte(proto)}
			// Items 0..2499 and the parameter: batches of 1000, 1000, 501.
			for start := 0; start < n; start += 1000 {
				end := min(start+1000, n)
				p.op('(')
				for k := start; k < end; k++ {
					item(k)
				}
				if end == n {
					p.str("lm_head.weight")
					p.put()
					p.global("torch._utils", "_rebuild_parameter")
					p.tensorV2("param", 4, 0, []int{2, 2}, []int{2, 1})
					p.op(0x88) // requires_grad True
					p.emptyOrderedDict()
					p.op(0x87) // TUPLE3
					p.put()
					p.op('R')
					p.put()
					// A tied weight: the same tensor object again, a
					// memo get past 255 (LONG_BINGET).
					p.str("model.tied.weight")
					p.put()
					p.get(tensorMemo[1500])
				}
				p.op('u')
				cut()
			}
			// One more item alone: SETITEM (a batch of one).
			p.str("model.norm.weight")
			p.put()
			p.tensorV2("0", 6, 3, []int{3}, []int{1})
			p.op('s')
			// The state: {'_metadata': OrderedDict({'': {'version': 1}})}, BUILD.
			p.op('}')
			p.put()
			p.str("_metadata")
			p.put()
			p.emptyOrderedDict()
			p.str("") // the root module's key
			p.put()
			p.op('}')
			p.put()
			p.str("version")
			p.put()
			p.int(1)
			p.op('s', 's', 's', 'b', '.')
			cut()
			var pkl []byte
			if proto >= 4 {
				pkl = framed(header, chunks)
			} else {
				pkl = append(header, slices.Concat(chunks...)...)
			}
			globals, err := scanPickleGlobals(pkl)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			if want := []string{"collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch.FloatStorage", "torch._utils._rebuild_parameter"}; !slices.Equal(globals, want) {
				t.Fatalf("globals %v, want %v", globals, want)
			}
			cf, err := ReadTorch(writeTorchZip(t, "archive", string(pkl), storages))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{0, 1, 255, 256, 999, 1000, 1001, 2499} {
				v := cf.Root.Get(fmt.Sprintf("model.layers.%d.weight", k))
				if v == nil || v.Tensor == nil {
					t.Fatalf("model.layers.%d.weight missing", k)
				}
				want := []float32{float32(k), float32(k) + 0.5, float32(k) + 1, float32(k) + 1.5, float32(k) + 2, float32(k) + 2.5}
				if got := v.Tensor.ToF32(); !slices.Equal(got, want) || !slices.Equal(v.Tensor.Shape, []int{2, 3}) {
					t.Fatalf("model.layers.%d.weight = %v %v, want [2 3] %v", k, v.Tensor.Shape, got, want)
				}
			}
			if v := cf.Root.Get("lm_head.weight"); v == nil || v.Tensor == nil || !slices.Equal(v.Tensor.ToF32(), []float32{7, 8, 9, 10}) {
				t.Fatalf("lm_head.weight (a Parameter) = %+v", v)
			}
			if v := cf.Root.Get("model.norm.weight"); v == nil || v.Tensor == nil || !slices.Equal(v.Tensor.ToF32(), []float32{1.5, 2, 2.5}) {
				t.Fatalf("model.norm.weight (offset 3 of storage 0) = %+v", v)
			}
			if v := cf.Root.Get("model.tied.weight"); v == nil || v.Tensor == nil || !slices.Equal(v.Tensor.ToF32(), []float32{1500, 1500.5, 1501, 1501.5, 1502, 1502.5}) {
				t.Fatalf("model.tied.weight (tensor 1500 again) = %+v", v)
			}
			if len(cf.Root.Keys) != n+3 {
				t.Fatalf("%d entries, want %d", len(cf.Root.Keys), n+3)
			}
		})
	}
}

// TestReadTorchZip64ManyStorages: torch.save of a list of 70,000 separate
// tensors writes one record per storage, 70,002 records in all: past
// 65,535 the end of central directory record holds 0xFFFF and the count is
// in the ZIP64 end record (APPNOTE 4.3.14; miniz in torch and Go's
// archive/zip both write it so). The MaxZipEntries check must read that
// count (70,002, under the bound) and the archive must load: every tensor
// k holds [k] from its own storage.
func TestReadTorchZip64ManyStorages(t *testing.T) {
	const n = 70_000
	p := &torchPickler{proto: 2, memo: map[string]int{}}
	p.op(0x80, 2, ']')
	p.put()
	storages := make(map[string][]byte, n)
	for start := 0; start < n; start += 1000 {
		p.op('(')
		for k := start; k < start+1000; k++ {
			p.tensorV2(fmt.Sprint(k), 1, 0, []int{1}, []int{1})
			storages[fmt.Sprint(k)] = tensor.FromF32([]float32{float32(k)}, 1).Data
		}
		p.op('e') // APPENDS
	}
	p.op('.')
	path := writeTorchZip(t, "many", string(p.out), storages)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	eocd := bytes.LastIndex(raw, []byte("PK\x05\x06"))
	if eocd < 0 || binary.LittleEndian.Uint16(raw[eocd+10:]) != 0xFFFF || !bytes.Contains(raw[max(0, eocd-100):], []byte("PK\x06\x06")) {
		t.Fatal("the archive was not written with a ZIP64 end record")
	}
	cf, err := ReadTorch(path)
	if err != nil {
		t.Fatal(err)
	}
	if cf.Root.Kind != KindList || len(cf.Root.Items) != n {
		t.Fatalf("root kind %d with %d items, want a list of %d", cf.Root.Kind, len(cf.Root.Items), n)
	}
	for _, k := range []int{0, 255, 256, 65535, 69999} {
		if got := cf.Root.Items[k].Tensor.ToF32(); !slices.Equal(got, []float32{float32(k)}) {
			t.Fatalf("item %d = %v, want [%d]", k, got, k)
		}
	}
}
