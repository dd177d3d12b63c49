package repl

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"hsdb/engine"
)

// TestInfoModelMLAHeads: on DeepSeek's MLA `info model` said "head_dim
// 32" while config.json says "head_dim": 8 (HF's DeepseekV3Config sets it
// to qk_rope_head_dim; 32 is qk_nope_head_dim + qk_rope_head_dim): one
// name, two numbers. The heads line now gives MLA's sizes under their
// config names, and --json an "mla" object; the expected values are read
// from the fixture's config.json here.
func TestInfoModelMLAHeads(t *testing.T) {
	const dir = "../testdata/hf/deepseek_v3"
	raw, err := os.ReadFile(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Heads  int `json:"num_attention_heads"`
		Nope   int `json:"qk_nope_head_dim"`
		Rope   int `json:"qk_rope_head_dim"`
		V      int `json:"v_head_dim"`
		KVLora int `json:"kv_lora_rank"`
		QLora  int `json:"q_lora_rank"`
		Head   int `json:"head_dim"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Head == c.Nope+c.Rope || c.QLora == 0 {
		t.Fatalf("fixture changed: %+v", c)
	}
	f := openFake(t, dir, engine.Options{})
	want := fmt.Sprintf("heads              %d (MLA): q/k %d = qk_nope_head_dim %d + qk_rope_head_dim %d, v_head_dim %d, kv_lora_rank %d, q_lora_rank %d\n",
		c.Heads, c.Nope+c.Rope, c.Nope, c.Rope, c.V, c.KVLora, c.QLora)
	f.AssertExec("info model", want)
	res := f.jsonExec("info model")[0]["result"].(map[string]any)
	mla, _ := res["mla"].(map[string]any)
	if mla == nil || mla["kv_lora_rank"] != float64(c.KVLora) || mla["qk_rope_head_dim"] != float64(c.Rope) || mla["v_head_dim"] != float64(c.V) {
		t.Errorf("--json mla: %v", res["mla"])
	}
	f = openFake(t, "../testdata/hf/llama", engine.Options{}) // not MLA: unchanged
	f.AssertExec("info model", "heads              8 query, 2 key/value, head_dim 12\n")
	if _, ok := f.jsonExec("info model")[0]["result"].(map[string]any)["mla"]; ok {
		t.Errorf("llama has an mla object")
	}
}
