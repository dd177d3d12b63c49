//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// MLAKVParams are the sizes of one MLAKVWrite: Tokens tokens of Heads
// heads, qk_nope_head_dim Nope, qk_rope_head_dim Rope, v_head_dim V, into
// caches of CacheRows rows.
type MLAKVParams struct {
	Tokens, Heads, Nope, Rope, V, CacheRows int
}

// MLAKVWrite runs kernels/mla.cu's mla_kv_write: for token t and head h,
// row rows[t] of k [CacheRows, Heads*(Nope+Rope)] gets kv's k_nope of head
// h then kPe's row t, and row rows[t] of v [CacheRows, Heads*V] kv's v of
// head h; kv [Tokens, Heads*(Nope+V)] is per head [k_nope | v], kPe
// [Tokens, Rope], rows a device int32 array. All of dtype dt.
func (d *GPU) MLAKVWrite(k, v, kv, kPe, rows driver.Ptr, p MLAKVParams, dt tensor.DType) error {
	sfx, err := suffix("mla_kv_write", dt)
	if err != nil {
		return err
	}
	if p.Tokens < 0 || p.Heads <= 0 || p.Nope < 0 || p.Rope < 0 || p.V < 0 || p.CacheRows < 0 ||
		int64(p.Heads)*int64(p.Nope+max(p.Rope, p.V)) > 1<<31-1 || p.Tokens > 1<<31-1 || p.CacheRows > 1<<31-1 {
		return fmt.Errorf("%w: mla_kv_write: %d tokens of %d heads of %d+%d / %d into %d rows",
			driver.ErrBadArgument, p.Tokens, p.Heads, p.Nope, p.Rope, p.V, p.CacheRows)
	}
	if p.Tokens == 0 {
		return nil
	}
	return d.Do(func() error {
		return d.launch("mla", "mla_kv_write_"+sfx, dim3{x: uint32(p.Tokens)}, dim3{x: 256}, 0,
			k, v, kv, kPe, rows, int32(p.Heads), int32(p.Nope), int32(p.Rope), int32(p.V), int32(p.CacheRows))
	})
}

// WriteMLAKV writes multi-head latent attention's keys per head [k_nope |
// k_pe] and values into rows a.Rows of k and v (the keys and values a
// step attends over) in one kernel (backend.Device.WriteMLAKV): no
// per-head copy of k_pe, no concatenated keys and no separate value
// tensor are made.
func (d *Device) WriteMLAKV(k, v, kv, kPe backend.Tensor, a *backend.MLAKVArgs) {
	const op = "write_mla_kv"
	kt, vt, st, pt := d.get(op, k), d.get(op, v), d.get(op, kv), d.get(op, kPe)
	d.float(op, st)
	H, T := a.Heads, len(a.Rows)
	if H <= 0 || a.Nope < 0 || a.Rope < 0 || a.V < 0 || kt.cols() != H*(a.Nope+a.Rope) || vt.cols() != H*a.V ||
		kt.rows() != vt.rows() || st.rows() != T || st.cols() != H*(a.Nope+a.V) || pt.rows() != T || pt.cols() != a.Rope ||
		kt.dt != st.dt || vt.dt != st.dt || pt.dt != st.dt {
		d.badArg(op, "k %v %s v %v %s from kv %v %s k_pe %v %s for %d heads of %d+%d / %d at %d rows",
			kt.shape, kt.dt, vt.shape, vt.dt, st.shape, st.dt, pt.shape, pt.dt, H, a.Nope, a.Rope, a.V, T)
	}
	d.checkIndices(op, a.Rows, kt.rows(), "the cache "+fmt.Sprint(kt.shape))
	if T == 0 {
		return
	}
	d.do(op, func() error {
		rp, err := d.uploadI32(a.Rows)
		if err != nil {
			return err
		}
		return d.g.MLAKVWrite(kt.ptr(), vt.ptr(), st.ptr(), pt.ptr(), rp,
			MLAKVParams{Tokens: T, Heads: H, Nope: a.Nope, Rope: a.Rope, V: a.V, CacheRows: kt.rows()}, st.dt)
	})
}

// MLAAttention is backend.Device.MLAAttention. A bf16 batch on a device
// that runs kernels/flash_wgmma.cu, with DeepSeek's head dims (qk_nope
// 128, qk_rope 64, v 128), reads the keys and values straight from kv and
// kPe (GPU.FlashAttentionMLA; a decode step's token is a query tile of
// one row): no per-head key or value tensor is written, which for
// DeepSeek-V3's 128 heads and 4096 tokens of context is 335 MB a layer.
// Anything else runs backend.MLAAttentionExpanded (WriteMLAKV into
// temporaries, then Attention).
func (d *Device) MLAAttention(q, kv, kPe backend.Tensor, a *backend.MLAAttnArgs) backend.Tensor {
	const op = "mla_attention"
	qt, st, pt := d.get(op, q), d.get(op, kv), d.get(op, kPe)
	d.float(op, qt)
	T, H := qt.rows(), a.Heads
	if H <= 0 || a.Nope < 0 || a.Rope < 0 || a.V < 0 || qt.cols() != H*(a.Nope+a.Rope) || st.cols() != H*(a.Nope+a.V) ||
		pt.cols() != a.Rope || pt.rows() != st.rows() || len(a.Base) != T || len(a.Pos) != T || st.dt != qt.dt || pt.dt != qt.dt {
		d.badArg(op, "q %v %s kv %v %s k_pe %v %s for %d heads of %d+%d / %d, %d tokens with %d bases and %d positions",
			qt.shape, qt.dt, st.shape, st.dt, pt.shape, pt.dt, H, a.Nope, a.Rope, a.V, T, len(a.Base), len(a.Pos))
	}
	for t := range T {
		if a.Pos[t] < 0 || a.Base[t] < 0 || int(a.Base[t])+int(a.Pos[t]) >= st.rows() {
			d.badArg(op, "token %d at row %d+%d outside kv of %d rows", t, a.Base[t], a.Pos[t], st.rows())
		}
	}
	if !flashAttn || a.Nope != mlaNope || a.Rope != 64 || a.V != 128 || !d.g.UseFlashAttentionMLA(qt.dt) {
		return backend.MLAAttentionExpanded(d, q, kv, kPe, a)
	}
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(qt.dt, T, H*a.V); err != nil || T == 0 {
			return err
		}
		tiles := FlashTiles(a.Base, a.Pos, 0, flashWgmmaBM)
		tp, err := d.upload(flashTileBytes(tiles))
		if err != nil {
			return err
		}
		return d.g.FlashAttentionMLA(y.ptr(), qt.ptr(), st.ptr(), pt.ptr(), tp, len(tiles),
			AttnParams{Heads: H, KVHeads: H, HeadDimK: a.Nope + a.Rope, HeadDimV: a.V, Scale: a.Scale, TileRows: flashWgmmaBM}, qt.dt)
	})
	return y
}
