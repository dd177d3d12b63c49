//go:build cuda

package cuda

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"hsdb/kernels"
)

// TestFlashKernelConstants: FlashAttention launches
// kernels/flash_attention.cu and kernels/flash_wgmma.cu with query tiles,
// key tiles, block sizes and shared memory that Go declares itself
// (flashBM, flashBN, flashThreads, flashWgmmaBM, flashWgmmaThreads,
// flashWgmmaSmem). Here they are derived again from the kernels' own
// #defines, read from the .cu sources (the test runs in its package's
// directory, as go test and scripts/gpu-test.sh run it), and the block
// sizes from the embedded PTX's .maxntid (nvcc's record of
// __launch_bounds__), so that a retuned kernel (FW_WG 1: 64 queries a
// block) cannot be launched with the old one's tiles (128 rows, half of
// them never computed) or blocks. The shared memory follows
// flash_wgmma.cu's layout comment: the query tile [FW_BM, FW_DK] bf16,
// FW_ST stages of keys [FW_BN, FW_DK] and values [FW_BN, FW_DV], and 1 KiB
// of alignment. No GPU needed.
func TestFlashKernelConstants(t *testing.T) {
	defs := func(file string) map[string]int {
		b, err := os.ReadFile("../../../kernels/" + file)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, g := range regexp.MustCompile(`(?m)^#define (\w+) (\d+)\b`).FindAllSubmatch(b, -1) {
			n, err := strconv.Atoi(string(g[2]))
			if err != nil {
				t.Fatalf("%s: #define %s %s: %v", file, g[1], g[2], err)
			}
			m[string(g[1])] = n
		}
		return m
	}
	get := func(m map[string]int, file, name string) int {
		t.Helper()
		v, ok := m[name]
		if !ok {
			t.Fatalf("kernels/%s: no #define %s with an integer", file, name)
		}
		return v
	}
	maxntid := func(mod, entry string) int {
		t.Helper()
		m, err := kernels.Lookup(mod) // the PTX the binary embeds and loads
		if err != nil {
			t.Fatal(err)
		}
		g := regexp.MustCompile(`\.entry ` + entry + `\([^)]*\)\s*\.maxntid (\d+), 1, 1`).FindStringSubmatch(m.PTX)
		if g == nil {
			t.Fatalf("kernels/ptx/%s.ptx: no .maxntid N, 1, 1 for %s", mod, entry)
		}
		n, _ := strconv.Atoi(string(g[1]))
		return n
	}

	fa := defs("flash_attention.cu")
	for _, c := range []struct {
		name     string
		goV, cuV int
	}{
		{"flashBM = FA_BM", flashBM, get(fa, "flash_attention.cu", "FA_BM")},
		{"flashBN = FA_BN", flashBN, get(fa, "flash_attention.cu", "FA_BN")},
		{"flashThreads = FA_THREADS", flashThreads, get(fa, "flash_attention.cu", "FA_THREADS")},
		{"flashThreads = .maxntid of flash_attention_bf16", flashThreads, maxntid("flash_attention", "flash_attention_bf16")},
		{"flashThreads = .maxntid of flash_attention_mla_bf16", flashThreads, maxntid("flash_attention", "flash_attention_mla_bf16")},
	} {
		if c.goV != c.cuV {
			t.Errorf("%s: Go %d, kernel %d", c.name, c.goV, c.cuV)
		}
	}

	const f = "flash_wgmma.cu"
	fw := defs(f)
	wg, dk, dv, bn, st := get(fw, f, "FW_WG"), get(fw, f, "FW_DK"), get(fw, f, "FW_DV"), get(fw, f, "FW_BN"), get(fw, f, "FW_ST")
	bm := 64 * wg // FW_BM: a warpgroup's 64 rows each
	smem := bm*dk*2 + st*bn*(dk+dv)*2 + 1024
	for _, c := range []struct {
		name     string
		goV, cuV int
	}{
		{"q·k head dim (useFlashWgmma) = FW_DK", 192, dk},
		{"v head dim (useFlashWgmma) = FW_DV", 128, dv},
		{"flashBN = FW_BN (FlashTile.keyTiles counts 64-key tiles)", flashBN, bn},
		{"flashWgmmaBM = 64·FW_WG", flashWgmmaBM, bm},
		{"flashWgmmaThreads = 128·FW_WG", flashWgmmaThreads, 128 * wg},
		{"flashWgmmaThreads = .maxntid of flash_wgmma_mla_bf16", flashWgmmaThreads, maxntid("flash_wgmma", "flash_wgmma_mla_bf16")},
		{"flashWgmmaSmem = Q + FW_ST·(K + V) + 1 KiB", flashWgmmaSmem, smem},
		{"FW_PIECE = [64, 64] bf16", 64 * 64 * 2, get(fw, f, "FW_PIECE")},
	} {
		if c.goV != c.cuV {
			t.Errorf("%s: Go %d, kernel %d", c.name, c.goV, c.cuV)
		}
	}
	if !(flashWgmmaSmem <= 227<<10) {
		t.Errorf("flashWgmmaSmem %d bytes, more than the 227 KiB a Hopper block may have", flashWgmmaSmem)
	}
}
