package model

import (
	"math"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// KVCache holds one decoder layer's cache on one rank: K [slots·capacity,
// KWidth] and V [slots·capacity, VWidth] where sequence slot s keeps
// position p at row s·capacity + p (Row). A cache of one tensor (VWidth 0,
// V nil) holds MLA's latent [c_kv | k_pe] per token, as vLLM's
// MLACommonBackend does. It grows (capacity by KVCapacity, copying what it
// holds) when a step needs more slots or positions; a prefill sizes it to
// its own batch (Place).
type KVCache struct {
	K, V           backend.Tensor // [Slots·Cap, KWidth] and [Slots·Cap, VWidth]; nil until first use (V stays nil when VWidth is 0)
	Slots, Cap     int            // sequence slots, and positions per slot
	KWidth, VWidth int            // columns of K and V on this rank (kv heads × head dim; MLA: kv_lora_rank + qk_rope_head_dim and 0)
}

// MinKVCapacity is the positions per slot a new cache starts with.
const MinKVCapacity = 16

// KVCapacity returns the positions per slot a cache holds once it has room
// for need positions: MinKVCapacity doubled until it reaches need (Ensure
// grows by this rule; the memory plan, engine/plan kvBytes, counts with
// it). A need past the largest such int is returned as it is.
func KVCapacity(need int) int {
	c := MinKVCapacity
	for c < need {
		if c > math.MaxInt/2 {
			return need
		}
		c *= 2
	}
	return c
}

// Row returns the cache row of position pos of slot slot.
func (kv *KVCache) Row(slot, pos int) int32 { return int32(slot*kv.Cap + pos) }

// Cache is one rank's KV caches, one per decoder layer.
type Cache struct {
	Layers []*KVCache // by decoder layer index (num_hidden_layers entries; unloaded layers stay empty)
}

// NewCache returns an empty cache for n layers; each layer's tensors are made
// on first use.
func NewCache(n int) *Cache {
	c := &Cache{Layers: make([]*KVCache, n)}
	for i := range c.Layers {
		c.Layers[i] = &KVCache{}
	}
	return c
}

// Bytes returns the device memory the cache holds.
func (c *Cache) Bytes(dt tensor.DType) int64 {
	var n int64
	for _, l := range c.Layers {
		n += int64(l.Slots*l.Cap*(l.KWidth+l.VWidth)) * int64(dt.Size())
	}
	return n
}

// Ensure makes room for slots sequences of need positions each, keeping the
// rows already written. vWidth 0 makes a cache of K alone (V nil).
func (kv *KVCache) Ensure(dev backend.Device, slots, need, kWidth, vWidth int) {
	if kv.K != nil && slots <= kv.Slots && need <= kv.Cap {
		return
	}
	newSlots := max(slots, kv.Slots)
	newCap := KVCapacity(max(kv.Cap, need))
	dt := dev.ActDType()
	k := dev.Zeros(dt, newSlots*newCap, kWidth)
	var v backend.Tensor
	if vWidth > 0 {
		v = dev.Zeros(dt, newSlots*newCap, vWidth)
	}
	if kv.K != nil {
		for s := range kv.Slots {
			dev.CopyRows(k, s*newCap, kv.K, s*kv.Cap, kv.Cap)
			if v != nil && kv.V != nil {
				dev.CopyRows(v, s*newCap, kv.V, s*kv.Cap, kv.Cap)
			}
		}
		kv.free(dev)
	}
	kv.K, kv.V, kv.Slots, kv.Cap, kv.KWidth, kv.VWidth = k, v, newSlots, newCap, kWidth, vWidth
}

// Free releases the cache's tensors.
func (kv *KVCache) Free(dev backend.Device) {
	kv.free(dev)
	*kv = KVCache{}
}

func (kv *KVCache) free(dev backend.Device) {
	if kv.K != nil {
		dev.Free(kv.K)
	}
	if kv.V != nil {
		dev.Free(kv.V)
	}
}

// Store writes the step's keys k [tokens, KWidth] and values v [tokens,
// VWidth] at their (slot, position) rows and returns the attention arguments'
// Base and Pos for the batch.
func (kv *KVCache) Store(dev backend.Device, b *Batch, k, v backend.Tensor) (base, pos []int32) {
	rows, base, pos := kv.Place(dev, b, cols(k), cols(v))
	dev.WriteRows(kv.K, k, rows)
	dev.WriteRows(kv.V, v, rows)
	return base, pos
}

// Place makes room for the step's tokens in a cache of keys kWidth and
// values vWidth wide (Ensure) and returns each token's cache row (its
// slot's first row + its position) and the attention arguments' Base and
// Pos, for a caller that writes the rows itself (Store, or MLA's latent
// write, vWidth 0). A prefill (Step 0, every sequence from position 0)
// starts every sequence anew, as Engine.Prefill forgets the previous
// ones: a cache of another size is given back first and made for the
// batch alone, its largest slot + 1 slots of KVCapacity(its longest
// sequence) positions. (Kept, a cache grew to the most slots of any
// batch times the longest sequence of any: a capture job of varied
// batches held many times what a batch needs.)
func (kv *KVCache) Place(dev backend.Device, b *Batch, kWidth, vWidth int) (rows, base, pos []int32) {
	maxPos := 0
	for _, p := range b.Pos {
		maxPos = max(maxPos, int(p))
	}
	maxSlot := 0
	for _, s := range b.Slots {
		maxSlot = max(maxSlot, s)
	}
	if kv.K != nil && b.Step == 0 && b.fromStart() && (kv.Slots != maxSlot+1 || kv.Cap != KVCapacity(maxPos+1)) {
		kv.Free(dev)
	}
	kv.Ensure(dev, maxSlot+1, maxPos+1, kWidth, vWidth)
	base = make([]int32, len(b.IDs))
	rows = make([]int32, len(b.IDs))
	seq := b.SeqOf()
	for t := range b.IDs {
		base[t] = int32(b.Slots[seq[t]] * kv.Cap)
		rows[t] = base[t] + b.Pos[t]
	}
	return rows, base, b.Pos
}

func cols(t backend.Tensor) int {
	s := t.Shape()
	if len(s) == 0 {
		return 1
	}
	return tensor.Numel(s[1:])
}
