package tensor

import (
	"math"
	"strings"
	"testing"
)

// TestHugeBlockEmptyScale: a block size near the int limit (from a
// hostile weight_block_size or group_size) made (n+b-1)/b wrap to 0 blocks,
// so a scale of 0 rows passed Check and Dequantize sliced past it (a
// panic). By hand: ⌈56/(2^63-1)⌉ = 1 scale row, ⌈96/32⌉ = 3 columns.
func TestHugeBlockEmptyScale(t *testing.T) {
	for _, c := range []struct {
		name   string
		q      *Quantized
		wantIn string
	}{
		{"fp8 scale of 0 rows", &Quantized{Format: QuantFP8Block, Shape: [2]int{56, 96}, Data: New(F8E4M3, 56, 96),
			Scale: New(F32, 0, 3), Block: [2]int{math.MaxInt, 32}}, "at most"},
		{"fp8 huge rows block, right scale", &Quantized{Format: QuantFP8Block, Shape: [2]int{56, 96}, Data: New(F8E4M3, 56, 96),
			Scale: New(F32, 1, 3), Block: [2]int{math.MaxInt, 32}}, "at most"},
		{"int4 group of 2^63-1", &Quantized{Format: QuantInt4Group, Shape: [2]int{4, 96}, Data: New(I32, 4, 12),
			Scale: New(BF16, 4, 0), Block: [2]int{1, math.MaxInt}}, "at most"},
		{"fp8 block 2^31 over the kernels' int32", &Quantized{Format: QuantFP8Block, Shape: [2]int{56, 96}, Data: New(F8E4M3, 56, 96),
			Scale: New(F32, 1, 3), Block: [2]int{1 << 31, 32}}, "at most 2147483647"},
	} {
		err := c.q.Check()
		if err == nil || !strings.Contains(err.Error(), c.wantIn) {
			t.Errorf("%s: Check = %v, want an error containing %q", c.name, err, c.wantIn)
		}
	}
	// The largest accepted block: one block covers the weight, one scale.
	q := &Quantized{Format: QuantFP8Block, Shape: [2]int{2, 2}, Data: New(F8E4M3, 2, 2), Scale: FromF32([]float32{3}, 1, 1), Block: [2]int{MaxBlock, MaxBlock}}
	for i := range q.Data.Data {
		q.Data.Data[i] = 0x38 // e4m3 1.0
	}
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	for i, v := range q.Dequantize().F32() {
		if v != 3 { // 1.0 · scale 3
			t.Fatalf("element %d = %v, want 3", i, v)
		}
	}
}

// TestCeilDiv: ⌈n/d⌉ by hand, including d = MaxInt where n+d-1
// overflows.
func TestCeilDiv(t *testing.T) {
	for _, c := range [][3]int{{0, 5, 0}, {1, 5, 1}, {5, 5, 1}, {6, 5, 2}, {96, 32, 3}, {97, 32, 4}, {56, math.MaxInt, 1}, {math.MaxInt, math.MaxInt, 1}, {math.MaxInt, 2, 1 << 62}} {
		if got := CeilDiv(c[0], c[1]); got != c[2] {
			t.Errorf("CeilDiv(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}

// TestShardOnBlocks: ShardOnBlocks says yes exactly where SliceRows and
// SliceCols cut a shard out quantized, for every row and column range of
// an fp8 weight [10, 12] of 4×4 blocks and an int4 weight [3, 40] of
// 4-column groups (whose columns also keep whole 8-column words, so 8 is
// the unit); and by hand: Qwen3-4B-FP8's gate_proj [9728, 2560] of 128×128
// blocks keeps rows 2432:4864 (--tp 4, 19 blocks) but not 1216:2432 (--tp
// 8, 9.5 blocks).
func TestShardOnBlocks(t *testing.T) {
	fp8 := &Quantized{Format: QuantFP8Block, Shape: [2]int{10, 12}, Block: [2]int{4, 4},
		Data: New(F8E4M3, 10, 12), Scale: New(F32, 3, 3)}
	int4 := &Quantized{Format: QuantInt4Group, Shape: [2]int{3, 40}, Block: [2]int{1, 4},
		Data: New(I32, 3, 5), Scale: New(BF16, 3, 10)}
	checked := 0
	for _, q := range []*Quantized{fp8, int4} {
		out, in := q.Shape[0], q.Shape[1]
		for a := 0; a < out; a++ {
			for b := a + 1; b <= out; b++ {
				_, err := q.SliceRows(a, b)
				if got := ShardOnBlocks(q.Format, q.Block, out, in, [2]int{a, b}, [2]int{0, in}); got != (err == nil) {
					t.Errorf("%s rows %d:%d: ShardOnBlocks %v, SliceRows %v", q.Format, a, b, got, err)
				}
				checked++
			}
		}
		for a := 0; a < in; a++ {
			for b := a + 1; b <= in; b++ {
				_, err := q.SliceCols(a, b)
				if got := ShardOnBlocks(q.Format, q.Block, out, in, [2]int{0, out}, [2]int{a, b}); got != (err == nil) {
					t.Errorf("%s columns %d:%d: ShardOnBlocks %v, SliceCols %v", q.Format, a, b, got, err)
				}
				checked++
			}
		}
	}
	if checked != 55+78+6+820 {
		t.Errorf("checked %d ranges", checked)
	}
	b := [2]int{128, 128}
	if !ShardOnBlocks(QuantFP8Block, b, 9728, 2560, [2]int{2432, 4864}, [2]int{0, 2560}) ||
		ShardOnBlocks(QuantFP8Block, b, 9728, 2560, [2]int{1216, 2432}, [2]int{0, 2560}) ||
		ShardOnBlocks(QuantFP8Block, b, 2560, 9728, [2]int{0, 2560}, [2]int{0, 1216}) ||
		!ShardOnBlocks(QuantInt4Group, [2]int{1, 32}, 7168, 2048, [2]int{0, 7168}, [2]int{1792, 2048}) ||
		ShardOnBlocks(QuantInt4Group, [2]int{1, 32}, 7168, 2048, [2]int{0, 7168}, [2]int{16, 32}) {
		t.Error("ShardOnBlocks disagrees with the hand-checked shards")
	}
}
