package quant

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// kimiQuantConfig is Kimi-K2-Thinking's quantization_config as released
// (config.json on the Hub; the issue quotes its ignore list).
const kimiQuantConfig = `{
  "quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
  "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": null, "output_activations": null,
    "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32,
      "dynamic": false, "actorder": null, "observer": "minmax", "block_structure": null}}},
  "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
  "kv_cache_scheme": null
}`

func mustParse(t testing.TB, s string) *Compressed {
	t.Helper()
	c, err := parseCompressed(json.RawMessage(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompressedMatchesKimiIgnoreList(t *testing.T) {
	c := mustParse(t, kimiQuantConfig)
	for name, want := range map[string]bool{
		"model.layers.3.mlp.experts.7.gate_proj.weight":                   true,
		"model.layers.3.mlp.experts.383.down_proj.weight":                 true,
		"language_model.model.layers.3.mlp.experts.0.up_proj.weight":      true,
		"model.layers.3.self_attn.q_a_proj.weight":                        false,
		"model.layers.3.self_attn.kv_b_proj.weight":                       false,
		"model.layers.3.mlp.shared_experts.down_proj.weight":              false,
		"model.layers.0.mlp.gate_proj.weight":                             false, // the dense layer-0 MLP
		"model.layers.0.mlp.down_proj.weight":                             false,
		"lm_head.weight":                                                  false,
		"language_model.lm_head.weight":                                   false, // the text model's name under the wrapper
		"language_model.model.layers.1.self_attn.o_proj.weight":           false,
		"model.layers.3.mlp.experts.7.gate_proj.weight_scale":             false, // not a weight
		"language_model.model.layers.9.mlp.shared_experts.up_proj.weight": false,
		// Not nn.Linear modules, so the class target "Linear" skips them.
		"model.embed_tokens.weight":                      false,
		"model.norm.weight":                              false,
		"model.layers.3.input_layernorm.weight":          false,
		"model.layers.3.self_attn.kv_a_layernorm.weight": false,
		"model.layers.3.mlp.gate.weight":                 false,
	} {
		if got := c.Quantizes(name); got != want {
			t.Errorf("Quantizes(%s) = %v, want %v", name, got, want)
		}
	}
	// re: patterns match at the start of the name as Python's re.match does
	// (compressed-tensors utils/match.py _match_name), not anywhere.
	c2 := mustParse(t, strings.Replace(kimiQuantConfig, `"lm_head", `, `"lm_head", "re:layers\\.5", `, 1))
	if !c2.Quantizes("model.layers.5.mlp.experts.0.up_proj.weight") {
		t.Errorf("re:layers\\.5 matched model.layers.5... although re.match anchors at the start")
	}
	// Kimi-K2.5's expert gate_proj [2048, 7168]: 896 words and 224 bf16
	// scales per row, plus the 8-byte weight_shape; the router, norms and
	// embeddings are not planned as int4.
	if b, ok := c.Planned("language_model.model.layers.3.mlp.experts.0.gate_proj.weight", 2048, 7168); !ok || b != 2048*896*4+2048*224*2+8 {
		t.Errorf("Planned(expert) = %d, %v; want %d, true", b, ok, 2048*896*4+2048*224*2+8)
	}
	for _, n := range []string{"model.layers.3.mlp.gate.weight", "model.embed_tokens.weight", "lm_head.weight", "model.layers.3.self_attn.q_b_proj.weight"} {
		if b, ok := c.Planned(n, 384, 7168); ok || b != 0 {
			t.Errorf("Planned(%s) = %d, %v; want dense", n, b, ok)
		}
	}
	if !strings.Contains(c.String(), "int4 symmetric, group 32") {
		t.Errorf("String() = %q", c.String())
	}
}

// packRow packs q values in [-8, 7] the way the format specifies: q+8,
// column 8w+i in bits [4i, 4i+4) of word w.
func packWords(t *testing.T, rows [][]int) *tensor.Tensor {
	t.Helper()
	words := (len(rows[0]) + 7) / 8
	out := tensor.New(tensor.I32, len(rows), words)
	for r, row := range rows {
		for j, q := range row {
			w := binary.LittleEndian.Uint32(out.Data[(r*words+j/8)*4:])
			w |= uint32(q+8) << (4 * uint(j%8))
			binary.LittleEndian.PutUint32(out.Data[(r*words+j/8)*4:], w)
		}
	}
	return out
}

func i32(v ...int32) *tensor.Tensor {
	t := tensor.New(tensor.I32, len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(t.Data[4*i:], uint32(x))
	}
	return t
}

func bf16(shape []int, v ...float32) *tensor.Tensor {
	t := tensor.New(tensor.BF16, shape...)
	for i, x := range v {
		binary.LittleEndian.PutUint16(t.Data[2*i:], tensor.F32ToBF16(x))
	}
	return t
}

// expertSource holds one quantized expert weight [2, 16] with group size 8
// (a config group of 8 so that the hand-derived values stay small).
func expertSource(t *testing.T) (*model.MapSource, string) {
	const mod = "model.layers.1.mlp.experts.0.down_proj"
	// Row 0: q = -8..7; row 1: q = 7..-8.
	var r0, r1 []int
	for j := range 16 {
		r0 = append(r0, j-8)
		r1 = append(r1, 7-j)
	}
	packed := packWords(t, [][]int{r0, r1})
	// By hand: row 0's stored nibbles are 0..15, so word 0 = 0x76543210 and
	// word 1 = 0xFEDCBA98.
	if w0, w1 := binary.LittleEndian.Uint32(packed.Data[0:]), binary.LittleEndian.Uint32(packed.Data[4:]); w0 != 0x76543210 || w1 != 0xFEDCBA98 {
		t.Fatalf("packing helper: words %#x %#x, want 0x76543210 0xfedcba98", w0, w1)
	}
	return &model.MapSource{Name: "fixture", Tensors: map[string]*tensor.Tensor{
		mod + ".weight_packed": packed,
		mod + ".weight_scale":  bf16([]int{2, 2}, 0.5, 2, 0.25, -1),
		mod + ".weight_shape":  i32(2, 16),
	}}, mod
}

const group8 = `{"quant_method": "compressed-tensors", "format": "pack-quantized",
  "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 8}}},
  "ignore": ["lm_head"]}`

func TestCompressedLoadDequantizesByHand(t *testing.T) {
	c := mustParse(t, group8)
	src, mod := expertSource(t)
	q, err := c.Load(src, mod+".weight", 2, 16)
	if err != nil || q == nil {
		t.Fatalf("Load: %v, %v", q, err)
	}
	got := q.Dequantize().F32()
	// Row 0: (j-8)·0.5 for j < 8, (j-8)·2 after; row 1: (7-j)·0.25, then (7-j)·(-1).
	for j := range 16 {
		w0, w1 := float32(j-8)*0.5, float32(7-j)*0.25
		if j >= 8 {
			w0, w1 = float32(j-8)*2, float32(7-j)*-1
		}
		if got[j] != w0 || got[16+j] != w1 {
			t.Errorf("column %d: got %v, %v; want %v, %v", j, got[j], got[16+j], w0, w1)
		}
	}
	if s := c.Stored(src, mod+".weight"); len(s) != 3 || s[0] != mod+".weight_packed" {
		t.Errorf("Stored = %v", s)
	}
	// 2 rows × 2 words × 4 bytes + 2 × 2 bf16 scales + 8-byte weight_shape.
	if b, ok := c.Planned(mod+".weight", 2, 16); !ok || b != 16+8+8 {
		t.Errorf("Planned = %d, %v; want 32, true", b, ok)
	}
	if b, ok := c.Planned("lm_head.weight", 2, 16); ok || b != 0 {
		t.Errorf("Planned(lm_head) = %d, %v; want 0, false", b, ok)
	}
	// An ignored module stored dense loads dense.
	if q, err := c.Load(src, "lm_head.weight", 2, 16); q != nil || err != nil {
		t.Errorf("Load(lm_head) = %v, %v; want nil, nil", q, err)
	}
}

func TestCompressedBadInput(t *testing.T) {
	c := mustParse(t, group8)
	for _, tc := range []struct {
		what  string
		edit  func(src *model.MapSource, mod string)
		want  string
		outIn [2]int
	}{
		{"weight_shape disagrees", func(s *model.MapSource, m string) { s.Tensors[m+".weight_shape"] = i32(2, 24) }, "weight_shape is [2, 24]", [2]int{2, 16}},
		{"config shape disagrees", func(*model.MapSource, string) {}, "weight_shape is [2, 16], the config implies [2, 24]", [2]int{2, 24}},
		{"packed shape", func(s *model.MapSource, m string) { s.Tensors[m+".weight_packed"] = tensor.New(tensor.I32, 2, 3) }, "weight_packed is i32 [2, 3]", [2]int{2, 16}},
		{"group size", func(s *model.MapSource, m string) { s.Tensors[m+".weight_scale"] = bf16([]int{2, 1}, 1, 1) }, "group_size 8", [2]int{2, 16}},
		{"missing scale", func(s *model.MapSource, m string) { delete(s.Tensors, m+".weight_scale") }, "no scale tensor model.layers.1.mlp.experts.0.down_proj.weight_scale", [2]int{2, 16}},
		{"missing shape", func(s *model.MapSource, m string) { delete(s.Tensors, m+".weight_shape") }, "weight_shape is missing", [2]int{2, 16}},
		{"missing everything", func(s *model.MapSource, m string) { delete(s.Tensors, m+".weight_packed") }, "neither model.layers.1.mlp.experts.0.down_proj.weight_packed", [2]int{2, 16}},
	} {
		src, mod := expertSource(t)
		tc.edit(src, mod)
		_, err := c.Load(src, mod+".weight", tc.outIn[0], tc.outIn[1])
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.what, err, tc.want)
		}
	}
	// Packed in the checkpoint but ignored by the config.
	src, _ := expertSource(t)
	src.Tensors["lm_head.weight_packed"] = src.Tensors["model.layers.1.mlp.experts.0.down_proj.weight_packed"]
	if _, err := c.Load(src, "lm_head.weight", 2, 16); err == nil || !strings.Contains(err.Error(), `ignored by "lm_head"`) {
		t.Errorf("packed ignored module: %v", err)
	}
	// Zero points under a symmetric scheme: compressed-tensors never writes
	// them there and would subtract them on decompression, so the config
	// and the tensors disagree (they were ignored and counted as used).
	src, mod0 := expertSource(t)
	src.Tensors[mod0+".weight_zero_point"] = i32(0, 0)
	if q, err := c.Load(src, mod0+".weight", 2, 16); q != nil || err == nil ||
		!strings.Contains(err.Error(), "symmetric is true but the checkpoint holds zero points "+mod0+".weight_zero_point") {
		t.Errorf("symmetric with zero points: %v, %v", q, err)
	}
	// Asymmetric without zero points.
	asym := mustParse(t, strings.Replace(group8, `"symmetric": true`, `"symmetric": false`, 1))
	src, mod := expertSource(t)
	if _, err := asym.Load(src, mod+".weight", 2, 16); err == nil || !strings.Contains(err.Error(), "no zero points "+mod+".weight_zero_point") {
		t.Errorf("asymmetric: %v", err)
	}
}

func TestParseCompressedRejects(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{`"format": "pack-quantized"`, `"format": "int-quantized"`, `format "int-quantized"`},
		{`"num_bits": 4`, `"num_bits": 8`, "weights.num_bits 8"},
		{`"type": "int"`, `"type": "float"`, `weights.type "float"`},
		{`"strategy": "group"`, `"strategy": "channel"`, `weights.strategy "channel"`},
		{`, "group_size": 8`, ``, "weights.group_size"},
		{`"targets": ["Linear"], `, `"targets": ["Linear"], "input_activations": {"num_bits": 8}, `, "input_activations"},
		{`"ignore": ["lm_head"]`, `"ignore": ["re:(?=x)"]`, `ignore "re:(?=x)"`},
		{`"quant_method": "compressed-tensors"`, `"quant_method": "awq"`, `quant_method "awq"`},
	} {
		s := strings.Replace(group8, tc.old, tc.new, 1)
		if s == group8 {
			t.Fatalf("edit %q did not apply", tc.old)
		}
		_, err := parseCompressed(json.RawMessage(s))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: error %v, want one containing %q", tc.old, tc.new, err, tc.want)
		}
	}
}

// TestCompressedGroupsOverlap: a module targeted by two config groups that
// quantize differently is refused naming the module, both groups and the
// target of each that matched. hsdb took the first group by key order
// ("Linear", group 8) while compressed-tensors prefers a target that
// matches the name over a class target (utils/match.py), so group 16's
// regex would have chosen the other group size. Groups that agree load.
func TestCompressedGroupsOverlap(t *testing.T) {
	two := func(gs string) string {
		return `{"quant_method": "compressed-tensors", "format": "pack-quantized",
  "config_groups": {
    "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 8}},
    "group_1": {"targets": ["re:.*experts\\.0\\..*"], "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": ` + gs + `}}},
  "ignore": ["lm_head"]}`
	}
	src, mod := expertSource(t)
	_, err := mustParse(t, two("16")).Load(src, mod+".weight", 2, 16)
	want := `module model.layers.1.mlp.experts.0.down_proj is targeted by quantization_config.config_groups.group_0 ("Linear": int4 symmetric, group 8) and .group_1 ("re:.*experts\\.0\\..*": int4 symmetric, group 16), which quantize differently`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("overlapping groups: %v\nwant %s", err, want)
	}
	if q, err := mustParse(t, two("8")).Load(src, mod+".weight", 2, 16); err != nil || q == nil {
		t.Fatalf("groups that agree: %v, %v", q, err)
	}
}

// TestCompressedMatchesEveryLayout: ignore entries written in the plain
// layout's names (exact or re:, which compressed-tensors anchors at the
// start) match a checkpoint kept in any of model.LMLayouts, and an entry
// written in the checkpoint's own names matches too (targets entries are
// matched under the same names, moduleNames). Expected values
// by hand: layer 3's expert 0 up_proj and every layer-4 module are ignored
// by name, lm_head is ignored, the rest of the experts are int4.
func TestCompressedMatchesEveryLayout(t *testing.T) {
	plain := strings.Replace(kimiQuantConfig, `"ignore": ["lm_head", `,
		`"ignore": ["lm_head", "model.layers.3.mlp.experts.0.up_proj", "re:model\\.layers\\.4\\.", `, 1)
	c := mustParse(t, plain)
	for _, lay := range []struct{ prefix, head string }{
		{"model", "lm_head.weight"},
		{"language_model.model", "language_model.lm_head.weight"},
		{"model.language_model", "lm_head.weight"},
		{"language_model", "lm_head.weight"},
	} {
		for name, want := range map[string]bool{
			lay.prefix + ".layers.3.mlp.experts.0.up_proj.weight":   false, // exact plain name
			lay.prefix + ".layers.3.mlp.experts.1.up_proj.weight":   true,
			lay.prefix + ".layers.4.mlp.experts.1.up_proj.weight":   false, // re: on the plain name
			lay.prefix + ".layers.14.mlp.experts.1.up_proj.weight":  true,  // re.match: "model.layers.14." is not "model.layers.4."
			lay.prefix + ".layers.3.self_attn.o_proj.weight":        false, // re:.*self_attn.*
			lay.prefix + ".layers.3.mlp.experts.9.down_proj.weight": true,
			lay.head: false,
		} {
			if got := c.Quantizes(name); got != want {
				t.Errorf("layout %s: Quantizes(%s) = %v, want %v", lay.prefix, name, got, want)
			}
		}
		// An exact entry in the checkpoint's own names.
		own := mustParse(t, strings.Replace(kimiQuantConfig, `"ignore": ["lm_head", `,
			`"ignore": ["lm_head", "`+lay.prefix+`.layers.5.mlp.experts.2.down_proj", `, 1))
		if own.Quantizes(lay.prefix + ".layers.5.mlp.experts.2.down_proj.weight") {
			t.Errorf("layout %s: ignore %q did not ignore its own module", lay.prefix, lay.prefix+".layers.5.mlp.experts.2.down_proj")
		}
		if !own.Quantizes(lay.prefix + ".layers.5.mlp.experts.3.down_proj.weight") {
			t.Errorf("layout %s: ignoring expert 2 ignored expert 3", lay.prefix)
		}
	}
}

// TestCompressedLayoutTable: for each layout a checkpoint may keep the
// language model in (hand-written prefixes and LM head names), a config
// naming modules plainly, in the stored layout, or by re: in either,
// ignores layer 2's expert 5 down_proj, targets expert 6 and leaves
// expert 7 to no group; the LM head is ignored. Each module is asked about
// under its stored name (the load) and its plain name (the plan), and both
// must give the hand-written answer.
func TestCompressedLayoutTable(t *testing.T) {
	const ignored, targeted, neither = "ignored", "targeted", "neither"
	layouts := []struct{ prefix, head, headRe string }{
		{"model", "lm_head", `lm_head`},
		{"language_model.model", "language_model.lm_head", `language_model\\.lm_head`},
		{"model.language_model", "lm_head", `lm_head`},
		{"language_model", "lm_head", `lm_head`},
	}
	for _, lay := range layouts {
		esc := strings.ReplaceAll(lay.prefix, ".", `\\.`)
		forms := map[string]struct{ ignore, targets string }{
			"plain": {`"lm_head", "model.layers.2.mlp.experts.5.down_proj"`,
				`"lm_head", "model.layers.2.mlp.experts.5.down_proj", "model.layers.2.mlp.experts.6.down_proj"`},
			"stored": {`"` + lay.head + `", "` + lay.prefix + `.layers.2.mlp.experts.5.down_proj"`,
				`"` + lay.head + `", "` + lay.prefix + `.layers.2.mlp.experts.5.down_proj", "` + lay.prefix + `.layers.2.mlp.experts.6.down_proj"`},
			"plain re": {`"re:lm_head", "re:model\\.layers\\.2\\.mlp\\.experts\\.5\\."`,
				`"re:lm_head", "re:model\\.layers\\.2\\.mlp\\.experts\\.[56]\\."`},
			"stored re": {`"re:` + lay.headRe + `", "re:` + esc + `\\.layers\\.2\\.mlp\\.experts\\.5\\."`,
				`"re:` + lay.headRe + `", "re:` + esc + `\\.layers\\.2\\.mlp\\.experts\\.[56]\\."`},
		}
		for form, f := range forms {
			cfg := `{"quant_method": "compressed-tensors", "format": "pack-quantized",
  "config_groups": {"group_0": {"targets": [` + f.targets + `],
    "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32}}},
  "ignore": [` + f.ignore + `]}`
			c := mustParse(t, cfg)
			for _, row := range []struct{ stored, plain, want string }{
				{lay.prefix + ".layers.2.mlp.experts.5.down_proj", "model.layers.2.mlp.experts.5.down_proj", ignored},
				{lay.prefix + ".layers.2.mlp.experts.6.down_proj", "model.layers.2.mlp.experts.6.down_proj", targeted},
				{lay.prefix + ".layers.2.mlp.experts.7.down_proj", "model.layers.2.mlp.experts.7.down_proj", neither},
				{lay.prefix + ".layers.12.mlp.experts.6.down_proj", "model.layers.12.mlp.experts.6.down_proj", neither},
				{lay.head, "lm_head", ignored},
			} {
				for _, name := range []string{row.stored, row.plain} {
					g, why := c.group(name)
					got := neither
					switch {
					case g != nil:
						got = targeted
					case strings.HasPrefix(why, "ignored by"):
						got = ignored
					}
					if got != row.want {
						t.Errorf("layout %s, config %s: %s is %s (%q), want %s", lay.prefix, form, name, got, why, row.want)
					}
				}
			}
		}
	}
}
