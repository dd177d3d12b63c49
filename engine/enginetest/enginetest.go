// Package enginetest holds what the engine's and the architectures' tests
// share: a hook that records site tensors on every rank, the comparisons
// the parity tests use, an HF fixture's token sequences (fixture.go) and a
// copy of an HF fixture with edited tensors.
// Only tests import it; it imports engine/model, engine/tensor and
// engine/safetensors.
package enginetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// Recorder is a model.Hook that copies the tensors named in Names (all when
// empty) of the sites Sites accepts to the host, for every rank: Got["site/
// name"][rank] (host tensors as they are, device tensors through ToHost),
// their labels in Shards, and the sites visited in order in Visits.
type Recorder struct {
	Sites  func(s *model.Site) bool
	Names  []string
	Got    map[string][]*tensor.Tensor
	Shards map[string][]model.Sharding
	Visits []string
}

// Want reports whether Sites accepts the event's site.
func (r *Recorder) Want(ev *model.Event) bool { return r.Sites(ev.Site) }

// Visit copies the chosen tensors of every rank.
func (r *Recorder) Visit(ev *model.Event, ranks []*model.RankView) error {
	if r.Got == nil {
		r.Got, r.Shards = map[string][]*tensor.Tensor{}, map[string][]model.Sharding{}
	}
	r.Visits = append(r.Visits, ev.Site.Path)
	for _, v := range ranks {
		for _, st := range v.Tensors {
			if len(r.Names) > 0 && !slices.Contains(r.Names, st.Name) {
				continue
			}
			x := st.Host
			if st.T != nil {
				s := st.T.Shape()
				x = v.Device.ToHost(st.T, 0, s[0], 0, tensor.Numel(s[1:]))
			}
			k := ev.Site.Path + "/" + st.Name
			r.Got[k] = append(r.Got[k], x)
			r.Shards[k] = append(r.Shards[k], st.Shard)
		}
	}
	return nil
}

// Rank returns rank's copy of "site/name", or nil.
func (r *Recorder) Rank(key string, rank int) *tensor.Tensor {
	if v := r.Got[key]; rank < len(v) {
		return v[rank]
	}
	return nil
}

// LayerOutputs selects the decoder layers' output sites (model.layers.i).
func LayerOutputs(s *model.Site) bool { return s.Layer >= 0 && s.Depth == 2 }

// CopyHF copies the HF fixture directory src (config.json and
// model.safetensors) to a new temporary directory, passing every tensor
// through edit (which may return it unchanged, a converted copy, or a
// modified copy: src's tensors alias its mapping and must not be written)
// and adding extra; it returns the new directory.
func CopyHF(t testing.TB, src string, edit func(name string, x *tensor.Tensor) *tensor.Tensor, extra map[string]*tensor.Tensor) string {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []safetensors.Named
	for _, n := range f.Names() {
		x, err := f.Tensor(n)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			x = edit(n, x)
		}
		ts = append(ts, safetensors.Named{Name: n, T: x})
	}
	names := make([]string, 0, len(extra))
	for n := range extra {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ts = append(ts, safetensors.Named{Name: n, T: extra[n]})
	}
	dir := t.TempDir()
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// EditJSON rewrites the JSON object file at path with edit applied to its
// decoded form (as someone other than hsdb would change a config.json or a
// manifest.json); it fails t when the file cannot be read, decoded or
// written.
func EditJSON(t testing.TB, path string, edit func(m map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
