package nn_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/model"
	"hsdb/engine/nn"
	"hsdb/engine/tensor"
)

// attnBlocks is a test model: a qkv_proj and an o_proj under self_attn.
type attnBlocks struct {
	qkv *nn.Linear
	o   *nn.RowLinear
}

func (attnBlocks) Forward(*model.Rank, *model.Batch) backend.Tensor { return nil }

// gqaBuild declares 4 query heads and 1 kv head of width 2 on hidden 3 under
// a module of class class.
func gqaBuild(class string) func(vb nn.Builder) attnBlocks {
	return func(vb nn.Builder) attnBlocks {
		plan, err := model.PlanHeads(4, 1, vb.World())
		if err != nil {
			panic(err)
		}
		a := vb.Pp("self_attn").Module(class, "input", "output")
		q, kv := nn.Heads(vb, 4, 2, plan.Q), nn.Heads(vb, 1, 2, plan.KV)
		return attnBlocks{qkv: nn.NewQKVParallel(a, "qkv_proj", 3, q, kv, false), o: nn.NewRowParallel(a.Pp("o_proj"), q, 3, false, true)}
	}
}

// TestTreeOfQKVWithReplicatedKVHead: at --tp 2 the one kv head is held by
// both ranks (vLLM's QKVParallelLinear replicates it), the query heads are
// split 2 + 2, and o_proj is split over the same query features. Derived by
// hand: q_proj [4·2, 3] rows 0:4 and 4:8; k_proj and v_proj [1·2, 3] rows
// 0:2 on both ranks; o_proj [3, 8] columns 0:4 and 4:8.
func TestTreeOfQKVWithReplicatedKVHead(t *testing.T) {
	tr := nn.Tree("TestForCausalLM", 2, gqaBuild("TestAttention"))
	want := []model.Param{
		{Name: "self_attn.q_proj.weight", Shape: []int{8, 3}, Dim: 0, Ranges: [][2]int{{0, 4}, {4, 8}}, Linear: true},
		{Name: "self_attn.k_proj.weight", Shape: []int{2, 3}, Dim: 0, Ranges: [][2]int{{0, 2}, {0, 2}}, Linear: true},
		{Name: "self_attn.v_proj.weight", Shape: []int{2, 3}, Dim: 0, Ranges: [][2]int{{0, 2}, {0, 2}}, Linear: true},
		{Name: "self_attn.o_proj.weight", Shape: []int{3, 8}, Dim: 1, Ranges: [][2]int{{0, 4}, {4, 8}}, Linear: true},
	}
	got := tr.Params()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("params\n%v\nwant\n%v", got, want)
	}
	var sites []string
	for _, s := range tr.Sites {
		sites = append(sites, s.Path+"("+s.Class+":"+strings.Join(s.Tensors, ",")+")")
	}
	wantSites := "self_attn.qkv_proj(QKVParallelLinear:input,q,k,v) self_attn.o_proj(RowParallelLinear:input,partial,output) self_attn(TestAttention:input,output)"
	if strings.Join(sites, " ") != wantSites {
		t.Errorf("sites %v\nwant %s", sites, wantSites)
	}
}

// TestLoadRankShards: rank 1 of 2 loads query rows 4:8, the replicated kv
// head's rows 0:2, and its site labels them: q sharded 4:8 of 8, k and v
// 0:2 of 2. With x the 3×3 identity, q_proj(x) = q_projᵀ, so the outputs
// are the rows themselves (weights numbered by hand: row i of a weight
// holds 10·i, 10·i+1, 10·i+2).
func TestLoadRankShards(t *testing.T) {
	rows := func(n int) *tensor.Tensor {
		v := make([]float32, n*3)
		for i := range v {
			v[i] = float32(10*(i/3) + i%3)
		}
		return tensor.FromF32(v, n, 3)
	}
	src := &model.MapSource{Name: "test", Tensors: map[string]*tensor.Tensor{
		"self_attn.q_proj.weight": rows(8), "self_attn.k_proj.weight": rows(2), "self_attn.v_proj.weight": rows(2),
		"self_attn.o_proj.weight": tensor.FromF32(make([]float32, 24), 3, 8)}}
	build := gqaBuild("TestAttention")
	tr := nn.Tree("TestForCausalLM", 2, build)
	dev := cpu.New(1)
	l := model.NewLoader(src, dev, 1, 2, tensor.Invalid)
	rm, err := nn.Load(l, tr, build)
	if err != nil {
		t.Fatal(err)
	}
	hook := &labels{}
	r := &model.Rank{Index: 1, World: 2, Dev: dev, Pass: &model.Pass{Hook: hook, Batch: &model.Batch{}}}
	outs := rm.(attnBlocks).qkv.Forward(r, dev.Upload(tensor.FromF32([]float32{1, 0, 0, 0, 1, 0, 0, 0, 1}, 3, 3)))
	for i, c := range []struct {
		first, n int
		label    string
	}{{4, 4, "sharded(dim=-1, 4:8 of 8)"}, {0, 2, "sharded(dim=-1, 0:2 of 2)"}, {0, 2, "sharded(dim=-1, 0:2 of 2)"}} {
		got := dev.ToHost(outs[i], 0, 3, 0, c.n).F32()
		for j := range c.n {
			for k := range 3 {
				if want := float32(10*(c.first+j) + k); !(got[k*c.n+j] == want) {
					t.Fatalf("output %d column %d row %d: %v, want %v", i, j, k, got[k*c.n+j], want)
				}
			}
		}
		if hook.labels[i+1] != c.label {
			t.Errorf("output %d labelled %s, want %s", i, hook.labels[i+1], c.label)
		}
	}
	if hook.labels[0] != "replicated" {
		t.Errorf("input labelled %s", hook.labels[0])
	}
}

// labels is a hook that keeps the labels of the last site visited.
type labels struct{ labels []string }

func (h *labels) Want(*model.Event) bool { return true }

func (h *labels) Visit(_ *model.Event, ranks []*model.RankView) error {
	h.labels = h.labels[:0]
	for _, st := range ranks[0].Tensors {
		h.labels = append(h.labels, st.Shard.String())
	}
	return nil
}

// TestLoadNeedsTheTreesDeclaration: loading into a tree that another
// declaration built fails naming the module, instead of loading blocks whose
// sites the tree does not hold.
func TestLoadNeedsTheTreesDeclaration(t *testing.T) {
	tr := nn.Tree("TestForCausalLM", 1, gqaBuild("TestAttention"))
	src := &model.MapSource{Name: "test", Tensors: map[string]*tensor.Tensor{}}
	_, err := nn.Load(model.NewLoader(src, cpu.New(-1), 0, 1, tensor.Invalid), tr, gqaBuild("OtherAttention"))
	if err == nil || !strings.Contains(err.Error(), "nn: module self_attn (OtherAttention) is not in the model tree") {
		t.Errorf("err = %v", err)
	}
}

// TestSplitLabels: labels of a split derived by hand: 6 heads of width 4
// over 3 ranks, rank 2 holds heads 4:6, features 16:24 of 24; its parts of
// width 1 are 4:6 of 6; a replicated split is replicated.
func TestSplitLabels(t *testing.T) {
	s := nn.Split{Units: 6, Width: 4, Ranges: model.EvenRanges(6, 3)}
	if got := s.Label(2, 4).String(); got != "sharded(dim=-1, 16:24 of 24)" {
		t.Errorf("label %s", got)
	}
	if got := s.Label(2, 1).String(); got != "sharded(dim=-1, 4:6 of 6)" {
		t.Errorf("part label %s", got)
	}
	if !slices.Equal(s.FeatureRanges(), [][2]int{{0, 8}, {8, 16}, {16, 24}}) {
		t.Errorf("feature ranges %v", s.FeatureRanges())
	}
	if got := nn.Replicated(1, 5).Label(0, 5).String(); got != "replicated" || nn.Replicated(1, 5).FeatureRanges() != nil {
		t.Errorf("replicated: %s %v", got, nn.Replicated(1, 5).FeatureRanges())
	}
}
