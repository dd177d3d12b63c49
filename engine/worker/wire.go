package worker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"hsdb/engine/tensor"
)

// Version is the protocol version a worker and a front must share: the
// hello carries it and a mismatch is refused.
const Version = 5

// Frame limits: nothing larger is read. A hello is tiny; a data frame holds
// at most one tensor of a step (an all-reduce of [tokens, hidden] f32, the
// logits [rows, vocab]).
const (
	maxHelloFrame = 64 << 10
	maxFrame      = 1 << 30
	maxDims       = 8
)

// conn is one framed connection: a frame is a little-endian uint32 length,
// then a kind byte and the payload (length counts both). Reads are bounded
// by limit and by the per-call deadline; writes by the deadline. Nothing a
// peer sends is ever executed: every frame is decoded into plain values and
// checked.
type conn struct {
	c       net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	limit   int
	timeout time.Duration // per read or write; 0: none
	wmu     sync.Mutex
	// heard is when the last frame's header arrived (Unix ns; 0: none
	// yet): how the front tells a silent worker from a busy one (abandon.go).
	heard atomic.Int64
}

func newConn(c net.Conn) *conn {
	return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10), limit: maxHelloFrame}
}

// send writes one frame.
func (c *conn) send(kind byte, e *enc) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.timeout > 0 {
		c.c.SetWriteDeadline(time.Now().Add(c.timeout))
	}
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(e.len()+1))
	hdr[4] = kind
	if e.parts != nil || len(e.b) >= c.w.Size() { // a large frame (logits, a tensor): one writev, no copy through the buffer
		if err := c.w.Flush(); err != nil {
			return err
		}
		bufs := append(net.Buffers{hdr[:]}, e.parts...)
		bufs = append(bufs, e.b)
		_, err := bufs.WriteTo(c.c)
		return err
	}
	if _, err := c.w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := c.w.Write(e.b); err != nil {
		return err
	}
	return c.w.Flush()
}

// recv reads one frame, waiting at most timeout (0: the connection's;
// negative: no limit).
func (c *conn) recv(timeout time.Duration) (byte, *dec, error) {
	if timeout == 0 {
		timeout = c.timeout
	}
	if timeout > 0 {
		c.c.SetReadDeadline(time.Now().Add(timeout))
	} else {
		c.c.SetReadDeadline(time.Time{})
	}
	var hdr [5]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	c.heard.Store(time.Now().UnixNano())
	n := int(binary.LittleEndian.Uint32(hdr[:4]))
	if n < 1 || n > c.limit {
		return 0, nil, fmt.Errorf("protocol: a frame of %d bytes (at most %d allowed here)", n, c.limit)
	}
	b := make([]byte, n-1)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return 0, nil, err
	}
	return hdr[4], &dec{b: b}, nil
}

// expect reads a frame of kind want; a frame of kind kindError is returned
// as its error, any other kind as a protocol error.
func (c *conn) expect(want byte, timeout time.Duration) (*dec, error) {
	k, d, err := c.recv(timeout)
	if err != nil {
		return nil, err
	}
	if k == kindError {
		return nil, errors.New(d.str())
	}
	if k != want {
		return nil, fmt.Errorf("protocol: got a %s message where %s was expected", kindName(k), kindName(want))
	}
	return d, nil
}

func (c *conn) close() error { return c.c.Close() }

// enc builds a payload: b, after parts when a large tensor's data was
// taken by reference (enc.tensor) rather than copied. Send it before the
// tensor changes.
type enc struct {
	b     []byte
	parts [][]byte // earlier bytes, then large tensors' data, in order
	n     int      // bytes in parts
}

// bigData is the size from which enc.tensor refers to a tensor's data
// instead of copying it (the frame then goes out as one writev).
const bigData = 32 << 10

// len returns the payload's length.
func (e *enc) len() int { return e.n + len(e.b) }

// reset empties the payload.
func (e *enc) reset() { e.b, e.parts, e.n = e.b[:0], nil, 0 }

func (e *enc) u8(v byte)    { e.b = append(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) i64(v int64)  { e.b = binary.LittleEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) int(v int)    { e.i64(int64(v)) }
func (e *enc) f64(v float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}
func (e *enc) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *enc) str(s string) { e.u32(uint32(len(s))); e.b = append(e.b, s...) }
func (e *enc) strs(s []string) {
	e.u32(uint32(len(s)))
	for _, x := range s {
		e.str(x)
	}
}
func (e *enc) ints(v []int) {
	e.u32(uint32(len(v)))
	for _, x := range v {
		e.int(x)
	}
}
func (e *enc) i32s(v []int32) {
	e.u32(uint32(len(v)))
	for _, x := range v {
		e.u32(uint32(x))
	}
}

// tensor writes a host tensor: dtype, shape, byte count, 0-7 bytes of
// padding (a count byte, then zeros) that put the data at an 8-byte
// offset of the frame, raw little-endian data.
func (e *enc) tensor(t *tensor.Tensor) {
	big := len(t.Data) >= bigData
	if !big {
		e.b = slices.Grow(e.b, 1+4+8*len(t.Shape)+4+len(t.Data))
	}
	e.u8(byte(t.DType))
	e.ints(t.Shape)
	e.u32(uint32(len(t.Data)))
	pad := (8 - (e.len()+1)%8) % 8 // the data starts 8-aligned in the frame: the receiver uses it in place
	e.u8(byte(pad))
	e.b = append(e.b, make([]byte, pad)...)
	if big { // by reference: written from where it lies
		e.parts = append(e.parts, e.b, t.Data)
		e.n += len(e.b) + len(t.Data)
		e.b = nil
		return
	}
	e.b = append(e.b, t.Data...)
}

// dec reads a payload. A read past the end, a count larger than the bytes
// left or a negative size sets err and yields zero values: check err once
// after decoding a message.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("protocol: "+format, args...)
	}
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail("a field of %d bytes with %d left", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}
func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (d *dec) i64() int64 {
	if b := d.take(8); b != nil {
		return int64(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// int reads an int that must lie in [0, 1<<40) (sizes, indices, counts).
func (d *dec) int() int {
	v := d.i64()
	if v < 0 || v >= 1<<40 {
		d.fail("an integer field %d out of range", v)
		return 0
	}
	return int(v)
}
func (d *dec) f64() float64 { return math.Float64frombits(uint64(d.i64())) }
func (d *dec) bool() bool   { return d.u8() != 0 }

// count reads an element count and checks that count elements of at least
// size bytes each fit in what is left.
func (d *dec) count(size int) int {
	n := int(d.u32())
	if d.err == nil && n*size > len(d.b) {
		d.fail("%d elements of %d bytes with %d bytes left", n, size, len(d.b))
		return 0
	}
	return n
}
func (d *dec) str() string { return string(d.take(d.count(1))) }
func (d *dec) strs() []string {
	n := d.count(4)
	out := make([]string, 0, n)
	for range n {
		out = append(out, d.str())
	}
	return out
}
func (d *dec) ints() []int {
	n := d.count(8)
	out := make([]int, 0, n)
	for range n {
		out = append(out, d.int())
	}
	return out
}
func (d *dec) i32s() []int32 {
	n := d.count(4)
	out := make([]int32, 0, n)
	for range n {
		out = append(out, int32(d.u32()))
	}
	return out
}

// shape reads a tensor shape: at most maxDims non-negative dims.
func (d *dec) shape() []int {
	s := d.ints()
	if len(s) > maxDims {
		d.fail("a shape of %d dimensions", len(s))
		return nil
	}
	return s
}

// tensor reads a host tensor, checking its byte count against dtype and
// shape.
func (d *dec) tensor() *tensor.Tensor {
	dt := tensor.DType(d.u8())
	shape := d.shape()
	n := d.count(1)
	if pad := d.u8(); pad > 7 {
		d.fail("a tensor's padding of %d bytes (at most 7)", pad)
	} else {
		d.take(int(pad))
	}
	data := d.take(n)
	if d.err != nil {
		return nil
	}
	if dt.Size() == 0 || !numelFits(shape, len(data)/max(dt.Size(), 1)) || tensor.Numel(shape)*dt.Size() != len(data) {
		d.fail("a tensor of dtype %d, shape %v with %d bytes", dt, shape, len(data))
		return nil
	}
	if len(data) > 0 && uintptr(unsafe.Pointer(&data[0]))%8 == 0 { // aligned in the frame, which is this message's alone: no copy
		return &tensor.Tensor{DType: dt, Shape: shape, Data: data}
	}
	t := tensor.New(dt, shape...)
	copy(t.Data, data)
	return t
}

// numelFits reports whether the product of shape is at most limit without
// overflow.
func numelFits(shape []int, limit int) bool {
	n := 1
	for _, s := range shape {
		if s < 0 {
			return false
		}
		if s != 0 && n > limit/s {
			return false
		}
		n *= s
	}
	return n <= limit
}
