package model

import (
	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// KVCache holds one decoder layer's keys and values on one rank: K
// [slots·capacity, kvWidth] and V [slots·capacity, vWidth] where sequence slot
// s keeps position p at row s·capacity + p. It grows (doubling, copying
// what it holds) when a step needs more slots or positions.
type KVCache struct {
	K, V           backend.Tensor // [Slots·Cap, KWidth] and [Slots·Cap, VWidth]; nil until first use
	Slots, Cap     int            // sequence slots, and positions per slot
	KWidth, VWidth int            // columns of K and V on this rank (kv heads × head dim, or MLA's latent)
}

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
// rows already written.
func (kv *KVCache) Ensure(dev backend.Device, slots, need, kWidth, vWidth int) {
	if kv.K != nil && slots <= kv.Slots && need <= kv.Cap {
		return
	}
	newSlots := max(slots, kv.Slots)
	newCap := max(kv.Cap, 16)
	for newCap < need {
		newCap *= 2
	}
	dt := dev.ActDType()
	k := dev.Zeros(dt, newSlots*newCap, kWidth)
	v := dev.Zeros(dt, newSlots*newCap, vWidth)
	if kv.K != nil {
		for s := range kv.Slots {
			dev.CopyRows(k, s*newCap, kv.K, s*kv.Cap, kv.Cap)
			dev.CopyRows(v, s*newCap, kv.V, s*kv.Cap, kv.Cap)
		}
		dev.Free(kv.K)
		dev.Free(kv.V)
	}
	kv.K, kv.V, kv.Slots, kv.Cap, kv.KWidth, kv.VWidth = k, v, newSlots, newCap, kWidth, vWidth
}

// Free releases the cache's tensors.
func (kv *KVCache) Free(dev backend.Device) {
	if kv.K != nil {
		dev.Free(kv.K)
		dev.Free(kv.V)
	}
	*kv = KVCache{}
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
// Pos, for a caller that writes the rows itself (Store, or MLA's fused
// key and value write).
func (kv *KVCache) Place(dev backend.Device, b *Batch, kWidth, vWidth int) (rows, base, pos []int32) {
	maxPos := 0
	for _, p := range b.Pos {
		maxPos = max(maxPos, int(p))
	}
	maxSlot := 0
	for _, s := range b.Slots {
		maxSlot = max(maxSlot, s)
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
