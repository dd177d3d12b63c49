package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// refKey maps one kind of key in a fixture's reference.safetensors (written
// by scripts/fixtures/make_hf_fixtures.py from HF transformers' modules and
// output_hidden_states) to where hsdb shows the same tensor: a site and
// tensor name, with %d the decoder layer (or HF's hidden-states index).
// elsewhere names the test that checks a key that is not a site tensor.
type refKey struct {
	pattern   *regexp.Regexp
	site      func(i, layers int) (site, name string)
	elsewhere string
}

func layerSite(format, name string) func(i, layers int) (string, string) {
	return func(i, _ int) (string, string) { return fmt.Sprintf(format, i), name }
}

// refKeys is the one table of every HF reference key the fixtures hold.
// HF's output_hidden_states[k]: k = 0 is the embeddings, k = i+1 layer i's
// output (hsdb's stream = hidden_states + residual), except the last entry,
// which HF returns after the final norm (model.norm's output).
var refKeys = []refKey{
	{pattern: regexp.MustCompile(`^embed$`), site: func(int, int) (string, string) { return "model.embed_tokens", "hidden_states" }},
	{pattern: regexp.MustCompile(`^attn\.(\d+)\.out$`), site: layerSite("model.layers.%d.self_attn", "output")},
	{pattern: regexp.MustCompile(`^attn\.(\d+)\.c_kv$`), site: layerSite("model.layers.%d.self_attn", "c_kv")},
	{pattern: regexp.MustCompile(`^mlp\.(\d+)\.out$`), site: layerSite("model.layers.%d.mlp", "output")},
	{pattern: regexp.MustCompile(`^layer\.(\d+)$`), site: layerSite("model.layers.%d", "stream")},
	{pattern: regexp.MustCompile(`^router\.(\d+)\.logits$`), site: layerSite("model.layers.%d.mlp.gate", "logits")},
	{pattern: regexp.MustCompile(`^router\.(\d+)\.topk_ids$`), site: layerSite("model.layers.%d.mlp.gate", "topk_ids")},
	{pattern: regexp.MustCompile(`^router\.(\d+)\.topk_weights$`), site: layerSite("model.layers.%d.mlp.gate", "topk_weights")},
	{pattern: regexp.MustCompile(`^final_norm$`), site: func(int, int) (string, string) { return "model.norm", "hidden_states" }},
	{pattern: regexp.MustCompile(`^hf_hidden_states\.(\d+)$`), site: func(k, layers int) (string, string) {
		switch {
		case k == 0:
			return "model.embed_tokens", "hidden_states"
		case k == layers:
			return "model.norm", "hidden_states"
		}
		return fmt.Sprintf("model.layers.%d", k-1), "stream"
	}},
	{pattern: regexp.MustCompile(`^logits$`), elsewhere: "the returned logits (below)"},
	{pattern: regexp.MustCompile(`^(input_ids|seq_lens)$`), elsewhere: "the batch's inputs (loadReference)"},
	{pattern: regexp.MustCompile(`^rope\.inv_freq$`), elsewhere: "engine/arch TestDeepseekRoPEMatchesHF and engine/model TestYaRNInvFreq"},
}

func lookupRefKey(key string) (*refKey, int, bool) {
	for i := range refKeys {
		m := refKeys[i].pattern.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		n := 0
		if len(m) > 1 {
			n, _ = strconv.Atoi(m[1])
		}
		return &refKeys[i], n, true
	}
	return nil, 0, false
}

var allFixtures = []string{"llama", "llama3", "mistral", "qwen2", "qwen3", "deepseek_v2", "deepseek_v3", "deepseek_v3_fp8"}

// TestHFReferenceTable compares every key of every fixture's reference with
// the site tensor refKeys maps it to, on every rank, at --tp 1, 2 and 4 (and
// --ep for the MoE fixtures), within 1e-5 of the tensor's max |value| (f32
// on the CPU); router choices as sets per token with weights paired. A key
// the table does not map fails the test, so a new reference tensor cannot
// go unchecked.
func TestHFReferenceTable(t *testing.T) {
	for _, name := range allFixtures {
		opts := []Options{{TP: 1}, {TP: 2}, {TP: 4}}
		if name[:4] == "deep" {
			opts = append(opts, Options{TP: 2, EP: true})
		}
		for _, o := range opts {
			t.Run(fmt.Sprintf("%s/tp%d/ep=%v", name, o.TP, o.EP), func(t *testing.T) {
				for _, err := range referenceTableErrors(t, name, o) {
					t.Error(err)
				}
			})
		}
	}
}

// referenceTableErrors runs fixture name with o and returns one error per
// reference tensor hsdb does not reproduce.
func referenceTableErrors(t *testing.T, name string, o Options) []error {
	ref, dir := loadReference(t, name)
	e, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rec := &enginetest.Recorder{Sites: func(*model.Site) bool { return true }}
	logits, err := e.Prefill(ref.seqs, rec, true)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	keys := ref.f.Names()
	if len(keys) == 0 {
		t.Fatalf("%s: empty reference", name)
	}
	compared := 0
	for _, key := range keys {
		k, i, ok := lookupRefKey(key)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: reference key %q is not in the table (refKeys)", name, key))
			continue
		}
		want := ref.tensor(t, key)
		if k.elsewhere != "" {
			if key == "logits" {
				if err := enginetest.CheckClose(logits.Values.F32(), want.ToF32(), 1e-5); err != nil {
					errs = append(errs, fmt.Errorf("%s logits: %v", name, err))
				}
				compared++
			}
			continue
		}
		site, tn := k.site(i, e.Dims.Layers)
		got := rec.Got[site+"/"+tn]
		if len(got) != e.World {
			errs = append(errs, fmt.Errorf("%s %s: %s/%s seen on %d ranks, want %d", name, key, site, tn, len(got), e.World))
			continue
		}
		for r, g := range got {
			if rec.Shards[site+"/"+tn][r].Kind != model.Replicated {
				errs = append(errs, fmt.Errorf("%s %s: rank %d's %s/%s is %v, want replicated", name, key, r, site, tn, rec.Shards[site+"/"+tn][r]))
				continue
			}
			var err error
			if tn == "topk_ids" || tn == "topk_weights" {
				if tn == "topk_ids" {
					err = sameRouting(g, rec.Got[site+"/topk_weights"][r], want, ref.tensor(t, fmt.Sprintf("router.%d.topk_weights", i)))
				}
			} else {
				err = enginetest.CheckClose(g.ToF32(), want.ToF32(), 1e-5)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s (rank %d %s/%s): %v", name, key, r, site, tn, err))
			}
		}
		compared++
	}
	if compared == 0 {
		errs = append(errs, fmt.Errorf("%s: nothing compared", name))
	}
	return errs
}

// sameRouting checks per token that the chosen experts are HF's as a set
// (HF's torch.topk is unsorted) and that each expert's weight matches HF's
// within 1e-5 of the largest weight.
func sameRouting(ids, w, refIDs, refW *tensor.Tensor) error {
	if ids == nil || w == nil || !slices.Equal(ids.Shape, refIDs.Shape) || !slices.Equal(w.Shape, refW.Shape) {
		return fmt.Errorf("routing shapes %v / %v, HF %v / %v", shapeOrNil(ids), shapeOrNil(w), refIDs.Shape, refW.Shape)
	}
	T, k := ids.Shape[0], ids.Shape[1]
	var got, want []float32
	for tok := range T {
		order := func(id *tensor.Tensor) []int {
			o := make([]int, k)
			for j := range o {
				o[j] = j
			}
			slices.SortFunc(o, func(a, b int) int { return int(id.Int(tok*k+a) - id.Int(tok*k+b)) })
			return o
		}
		og, ow := order(ids), order(refIDs)
		for j := range k {
			if a, b := ids.Int(tok*k+og[j]), refIDs.Int(tok*k+ow[j]); a != b {
				return fmt.Errorf("token %d: experts differ (%d vs HF %d)", tok, a, b)
			}
			got = append(got, w.ToF32()[tok*k+og[j]])
			want = append(want, refW.ToF32()[tok*k+ow[j]])
		}
	}
	return enginetest.CheckClose(got, want, 1e-5)
}

func shapeOrNil(t *tensor.Tensor) any {
	if t == nil {
		return nil
	}
	return t.Shape
}

// TestFixturesMatchManifest: every file that testdata/hf/MANIFEST.json and
// testdata/captures/EXPECTED.json list (written by the fixture generators
// on the GPU machine) has the recorded size and sha256, so a fixture edited
// by hand, or by a broken regeneration, cannot pass as HF's.
func TestFixturesMatchManifest(t *testing.T) {
	var hf struct {
		Fixtures map[string]struct {
			Files map[string]fileSum `json:"files"`
		} `json:"fixtures"`
	}
	readJSON(t, "../testdata/hf/MANIFEST.json", &hf)
	n := 0
	for name, f := range hf.Fixtures {
		for file, sum := range f.Files {
			checkSum(t, filepath.Join("../testdata/hf", name, file), sum)
			n++
		}
	}
	var capt struct {
		Files map[string]fileSum `json:"files"`
	}
	readJSON(t, "../testdata/captures/EXPECTED.json", &capt)
	for file, sum := range capt.Files {
		checkSum(t, filepath.Join("../testdata/captures", file), sum)
		n++
	}
	if len(hf.Fixtures) < len(allFixtures) || n < len(allFixtures)*3 {
		t.Fatalf("manifests list %d fixtures and %d files, want at least %d and %d", len(hf.Fixtures), n, len(allFixtures), len(allFixtures)*3)
	}
}

type fileSum struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func checkSum(t *testing.T, path string, want fileSum) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); int64(len(b)) != want.Bytes || got != want.SHA256 || want.SHA256 == "" {
		t.Errorf("%s: %d bytes sha256 %s, the manifest records %d bytes sha256 %q", path, len(b), got, want.Bytes, want.SHA256)
	}
}
