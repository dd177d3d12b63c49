package plan

import (
	"testing"

	"hsdb/engine/tensor"
)

// TestCheckAdvice: a refusal ends with what can be changed, and that
// depends on where the ranks are. Ranks with a device each (GPUs): fewer
// layers or more devices. Ranks sharing one host (the CPU backend,
// Shared): "use more devices" meant nothing there (more ranks on the host
// add no memory), so fewer layers, a machine with more memory or ranks on
// hosts of their own; and where the quantized weights are dequantized on
// load (to f32 without --dtype), what that costs and what keeps them
// smaller. By hand: ranks of 300 and 500 bytes; on devices of 400 rank 1
// is 100 B short; sharing 700 the two need 800 B, 100 B short.
func TestCheckAdvice(t *testing.T) {
	ranks := []Rank{{Rank: 0, Total: 300}, {Rank: 1, Total: 500}}
	const shared = "not enough memory: the 2 ranks sharing the host need 800 B in all (rank 0 300 B, rank 1 500 B) but 700 B is available: 100 B short; "
	const host = "load fewer decoder layers with --load-layers A-B or use a machine with more memory (the ranks share this host's: more ranks on it add none; ranks on hosts of their own, hsdb --listen, need only their own)"
	for _, c := range []struct {
		name string
		p    *Plan
		want string
	}{
		{"devices", &Plan{DeviceBytes: 400, Ranks: ranks},
			"not enough memory: rank 1 needs 500 B (weights 0 B, KV cache 0 B, activations 0 B) but its device has 400 B: 100 B short (1 of 2 ranks do not fit); load fewer decoder layers with --load-layers A-B or use more devices"},
		{"shared host", &Plan{DeviceBytes: 700, Shared: true, Ranks: ranks}, shared + host},
		{"shared host, fp8 dequantized to f32", &Plan{DeviceBytes: 700, Shared: true, Ranks: ranks, scheme: "fp8 e4m3, 128×128 blocks", dequant: tensor.F32},
			shared + host + "; the CPU backend dequantizes the quantized weights (fp8 e4m3, 128×128 blocks) on load to f32, 4 bytes a parameter: --dtype bf16 keeps them in 2, and GPUs (--device cuda) keep them as stored"},
		{"shared host, fp8 dequantized to bf16", &Plan{DeviceBytes: 700, Shared: true, Ranks: ranks, scheme: "fp8 e4m3, 128×128 blocks", dequant: tensor.BF16},
			shared + host + "; the CPU backend dequantizes the quantized weights (fp8 e4m3, 128×128 blocks) on load to bf16, 2 bytes a parameter; GPUs (--device cuda) keep them as stored"},
	} {
		err := c.p.Check()
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
}
