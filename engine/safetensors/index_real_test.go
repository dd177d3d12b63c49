package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// decodeIndexByTokens is the reference reading of an index: encoding/json's
// Decoder tokens over weight_map (what OpenIndex did before its scanner),
// giving the names in order and the file of each.
func decodeIndexByTokens(t *testing.T, raw []byte) (names []string, fileOf map[string]string) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(top["weight_map"]))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	fileOf = map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var file string
		if err := dec.Decode(&file); err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		fileOf[tok.(string)] = file
	}
	return names, fileOf
}

// TestIndexRealShapes: indexes as real checkpoints write them open with the
// scanner exactly as encoding/json reads them. DeepSeek-V3's index names
// 91,991 tensors over 163 shards; Kimi-K2.5's int4 experts alone are 384
// experts × 3 projections × 3 tensors (weight_packed, weight_scale,
// weight_shape) × 60 layers = 207,360, and its index is written by
// Python's json.dump(indent=2, ensure_ascii=True): pretty-printed, "\/"
// and "\u00e9"-style escapes possible in names, a metadata object with
// total_size an int or a float and nested values. Every name and file
// must equal encoding/json's decoding, in order, and a tensor whose index
// name is escaped must read from its shard under the decoded name.
func TestIndexRealShapes(t *testing.T) {
	dir := t.TempDir()
	const shards = 163
	shardName := func(k int) string { return fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, shards) }
	// Shard 1 holds the tensors with escaped names; it is opened and read.
	special := []struct {
		escaped, decoded string
		v                float32
	}{
		{`model.layers.0.caf\u00e9.weight`, "model.layers.0.café.weight", 1},
		{`vision_tower\/patch_embed.weight`, "vision_tower/patch_embed.weight", 2},
		{`q\"uote\\d \ud83d\ude00.bias`, "q\"uote\\d 😀.bias", 3},
		{`model.embed_tokens.weight`, "model.embed_tokens.weight", 4},
	}
	var ts []Named
	for _, sp := range special {
		ts = append(ts, Named{sp.decoded, tensor.FromF32([]float32{sp.v, -sp.v}, 2)})
	}
	if err := WriteFile(filepath.Join(dir, shardName(0)), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	for k := 1; k < shards; k++ { // never opened: only their existence is checked
		if err := os.WriteFile(filepath.Join(dir, shardName(k)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	b.WriteString("{\r\n  \"metadata\": {\n    \"total_size\": 1029173528576.0,\n    \"total_parameters\": 1026408232448,\n" +
		"    \"format\": \"pt\",\n    \"nested\": {\"a\": [1, -2.5e-3, true, null, {\"b\": \"\\u00e9\"}]}\n  },\n  \"weight_map\": {\n")
	n := 0
	entry := func(nameJSON, file string) {
		if n > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    \"%s\"\t:  \"%s\"", nameJSON, file)
		n++
	}
	for _, sp := range special {
		entry(sp.escaped, shardName(0))
	}
	// Kimi-K2.5's language model: 60 MoE layers of 384 int4 experts.
	for l := 1; l <= 60; l++ {
		for e := range 384 {
			for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
				for _, suffix := range []string{"weight_packed", "weight_scale", "weight_shape"} {
					entry(fmt.Sprintf("language_model.model.layers.%d.mlp.experts.%d.%s.%s", l, e, proj, suffix), shardName(1+(l*384+e)%(shards-1)))
				}
			}
		}
	}
	b.WriteString("\n  }\n}\n")
	raw := []byte(b.String())
	p := filepath.Join(dir, IndexName)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	wantNames, wantFiles := decodeIndexByTokens(t, raw)
	if len(wantNames) != 4+60*384*9 {
		t.Fatalf("reference decoded %d names", len(wantNames))
	}
	s, err := OpenIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Names(); !slices.Equal(got, wantNames) {
		t.Fatalf("names differ from encoding/json's: %d names, want %d (first %q, want %q)", len(got), len(wantNames), got[0], wantNames[0])
	}
	for name, file := range s.Files() {
		if wantFiles[name] != file {
			t.Fatalf("%q in %q, encoding/json reads %q", name, file, wantFiles[name])
		}
	}
	if len(s.Files()) != len(wantFiles) {
		t.Fatalf("%d files entries, want %d", len(s.Files()), len(wantFiles))
	}
	if m := s.Metadata(); m["format"] != "pt" || m["total_size"] != "1029173528576.0" {
		t.Errorf("metadata %v", m)
	}
	for _, sp := range special {
		x, err := s.Tensor(sp.decoded)
		if err != nil {
			t.Fatalf("%q: %v", sp.decoded, err)
		}
		if got := x.ToF32(); !slices.Equal(got, []float32{sp.v, -sp.v}) {
			t.Errorf("%q = %v, want [%g %g]", sp.decoded, got, sp.v, -sp.v)
		}
	}
}

// TestIndexReusedShard: a checkpoint that reuses another checkpoint's shard
// (a Qwen AWQ checkpoint reusing 33 official shards whose index selects
// only some of their tensors: vllm-project/vllm#54230) holds in it copies
// of tensors its index places in other shards. Those copies are not
// refused and not read: the index's shard is (the index is the per-file
// allowlist that pull request makes of it). A tensor the index names
// nowhere is still refused (transformers loads it, hsdb would take it for
// absent), and the message gives both remedies: list it, or remove it
// from the reused shard.
func TestIndexReusedShard(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ts ...Named) {
		if err := WriteFile(filepath.Join(dir, name), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	f := func(v float32) *tensor.Tensor { return tensor.FromF32([]float32{v}, 1) }
	// reused.safetensors: its own a, and a stale copy of b (the index puts b in new.safetensors).
	write("reused.safetensors", Named{"a", f(1)}, Named{"b", f(-99)})
	write("new.safetensors", Named{"b", f(2)})
	idx := `{"weight_map": {"a": "reused.safetensors", "b": "new.safetensors"}}`
	p := filepath.Join(dir, IndexName)
	if err := os.WriteFile(p, []byte(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]float32{"a": 1, "b": 2} {
		x, err := s.Tensor(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := x.ToF32(); !slices.Equal(got, []float32{want}) {
			t.Errorf("%s = %v, want [%g] from the shard the index names", name, got, want)
		}
	}
	// A tensor named nowhere in the index: refused, both remedies named.
	write("reused.safetensors", Named{"a", f(1)}, Named{"c", f(3)})
	s2, err := OpenIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	_, err = s2.Tensor("a")
	if !errors.Is(err, ErrIndexUnlisted) || !strings.Contains(err.Error(), "add it to weight_map if it belongs to the model, or remove it from the shard") {
		t.Fatalf("unlisted c: %v, want ErrIndexUnlisted naming both remedies", err)
	}
}
