package model

import (
	"testing"

	"hsdb/engine/backend/cpu"
	"hsdb/engine/tensor"
)

// TestKVCapacity: 16 doubled until need fits (16 for 0..16, 32 for 17..32,
// 64 for 33).
func TestKVCapacity(t *testing.T) {
	for need, want := range map[int]int{0: 16, 1: 16, 16: 16, 17: 32, 22: 32, 32: 32, 33: 64, 4096: 4096, 4097: 8192} {
		if got := KVCapacity(need); got != want {
			t.Errorf("KVCapacity(%d) = %d, want %d", need, got, want)
		}
	}
}

// TestLatentCacheGrows: a cache of one tensor (vWidth 0, MLA's latent)
// keeps what it holds when it grows past its capacity and when a slot is
// added, has no V, counts only K's bytes, and frees to empty. Two slots of
// 3 columns: position p of slot s holds 100·s + p in every column; after
// growing from 16 to 32 positions and to 3 slots, K is [3·32, 3] float32,
// 1152 bytes.
func TestLatentCacheGrows(t *testing.T) {
	dev := cpu.New(0)
	c := NewCache(1)
	kv := c.Layers[0]
	fill := func(slots, positions int) {
		vals := make([]float32, slots*positions*3)
		rows := make([]int32, slots*positions)
		for s := range slots {
			for p := range positions {
				i := s*positions + p
				rows[i] = kv.Row(s, p)
				for j := range 3 {
					vals[i*3+j] = float32(100*s + p)
				}
			}
		}
		dev.WriteRows(kv.K, dev.Upload(tensor.FromF32(vals, slots*positions, 3)), rows)
	}
	kv.Ensure(dev, 2, 10, 3, 0)
	if kv.V != nil || kv.Cap != 16 || kv.Slots != 2 {
		t.Fatalf("a latent cache: V %v, capacity %d, %d slots; want no V, 16, 2", kv.V, kv.Cap, kv.Slots)
	}
	fill(2, 10)
	kv.Ensure(dev, 3, 20, 3, 0)
	if kv.V != nil || kv.Cap != 32 || kv.Slots != 3 {
		t.Fatalf("grown: V %v, capacity %d, %d slots; want no V, 32, 3", kv.V, kv.Cap, kv.Slots)
	}
	k := dev.ToHost(kv.K, 0, 3*32, 0, 3).F32()
	for s := range 2 {
		for p := range 10 {
			for j := range 3 {
				if got := k[(s*32+p)*3+j]; got != float32(100*s+p) {
					t.Fatalf("after growing, slot %d position %d column %d holds %v, want %d", s, p, j, got, 100*s+p)
				}
			}
		}
	}
	if got := c.Bytes(tensor.F32); got != 3*32*3*4 {
		t.Errorf("Bytes = %d, want 1152", got)
	}
	kv.Free(dev)
	if kv.K != nil || kv.V != nil || c.Bytes(tensor.F32) != 0 {
		t.Errorf("after Free: K %v, V %v, %d bytes", kv.K, kv.V, c.Bytes(tensor.F32))
	}
}
