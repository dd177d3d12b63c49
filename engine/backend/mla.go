package backend

// MLAAttnArgs describes Device.MLAAttention: Heads heads of
// qk_nope_head_dim Nope + qk_rope_head_dim Rope and v_head_dim V
// (config.json's names), the softmax scale, and for each token the row of
// its sequence's position 0 in kv and kPe (Base) and its position (Pos):
// token t attends to rows Base[t]+j, 0 <= j <= Pos[t], as AttnArgs.
type MLAAttnArgs struct {
	Heads, Nope, Rope, V int
	Scale                float32
	Base, Pos            []int32 // [tokens]
}

// MLAAttentionExpanded is Device.MLAAttention by its definition: the
// per-head keys [rows, Heads*(Nope+Rope)] and values [rows, Heads*V] are
// written out with WriteMLAKV into temporaries of the activation dtype,
// Attention runs on them, and they are freed. The CPU backend's
// MLAAttention, and the CUDA backend's wherever its fused kernel does not
// run.
func MLAAttentionExpanded(dev Device, q, kv, kPe Tensor, a *MLAAttnArgs) Tensor {
	rows := 0
	if s := kv.Shape(); len(s) > 0 {
		rows = s[0]
	}
	dt := dev.ActDType()
	k := dev.Zeros(dt, rows, a.Heads*(a.Nope+a.Rope))
	v := dev.Zeros(dt, rows, a.Heads*a.V)
	defer dev.Free(k)
	defer dev.Free(v)
	all := make([]int32, rows)
	for i := range all {
		all[i] = int32(i)
	}
	dev.WriteMLAKV(k, v, kv, kPe, &MLAKVArgs{Heads: a.Heads, Nope: a.Nope, Rope: a.Rope, V: a.V, Rows: all})
	return dev.Attention(q, k, v, &AttnArgs{Heads: a.Heads, KVHeads: a.Heads, DK: a.Nope + a.Rope, DV: a.V, Scale: a.Scale,
		Base: a.Base, Pos: a.Pos})
}
