package debug

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/regfile"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

// patchSeq is one sequence of a dump: its ids and the patched tensor's rows
// [len, cols] in f32.
type patchSeq struct {
	ids  []int32
	rows *tensor.Tensor
	// integer is set when the dump holds the tensor in an integer dtype
	// (a router's topk_ids site capture): rows holds its ids as f32
	// (exact below 2^24), which compare checks for equality.
	integer bool
}

// layerSite matches a decoder layer's output site.
var layerSite = regexp.MustCompile(`^model\.layers\.(\d+)$`)

// patchSource finds what an hsdb dump holds for tensor name of site: a
// layer capture (hidden_states.{i}, when the dump captured that half of
// layer i's output) or a site capture (SITE:TENSOR). It reads the
// manifest only: the sequences are read where the patch applies
// (readDumpSeqs), those of the batch alone. Errors name the dump and what
// it holds.
func patchSource(dir, site, name string) (*capture.Manifest, string, error) {
	m, err := readHsdbDump(dir, "patch")
	if err != nil {
		return nil, "", err
	}
	key := dumpKey(m, site, name)
	if key == "" {
		return nil, "", fmt.Errorf("patch: %w: dump %s holds no %s of %s (it holds: %s)", client.ErrNoTensor, dir, name, site, dumpHolds(m))
	}
	return m, key, nil
}

// readHsdbDump reads the manifest of the hsdb dump at dir for cmd (patch,
// compare), which read hsdb's own files (seq_N.safetensors holding
// hidden_states.{layer}): a dump written in a trainer's format
// (speculators' hs_{idx}.safetensors, SpecForge's torch archives) is
// refused naming its format, not read as if it were one.
//
// What is not a dump at all (a file such as `save` writes, a directory
// without manifest.json, a missing path) is named as such, not reported
// as the failure to open DIR/manifest.json.
func readHsdbDump(dir, cmd string) (*capture.Manifest, error) {
	const reads = "reads an hsdb dump directory (DIR/manifest.json and its files, as `dump DIR` writes)"
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such dump directory %s: %s %s", cmd, dir, cmd, reads)
	case err == nil && !st.IsDir():
		return nil, fmt.Errorf("%s: %s is %s, not a dump directory: %s %s; `check FILE` reads a single capture file", cmd, dir, regfile.Kind(st.Mode()), cmd, reads)
	}
	m, err := capture.ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s holds no manifest.json, so it is not an hsdb dump: %s %s", cmd, dir, cmd, reads)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if f := m.Capture.Format; f != "" && f != string(capture.FormatHsdb) {
		return nil, fmt.Errorf("%s: dump %s is in %s format (the trainer's files); %s reads an hsdb dump (dump DIR without --format, or hsdb capture --format hsdb)", cmd, dir, f, cmd)
	}
	return m, nil
}

// dumpKey returns the key under which dump m holds tensor name of site, or
// "": hidden_states.{i} for decoder layer i's output when the dump
// captured that half (its What), or a site capture's SITE:TENSOR.
func dumpKey(m *capture.Manifest, site, name string) string {
	for _, si := range m.Capture.Sites {
		if si.Site == site && si.Tensor == name {
			return si.Key
		}
	}
	if g := layerSite.FindStringSubmatch(site); g != nil && m.Capture.What == name {
		i, _ := strconv.Atoi(g[1])
		for _, l := range m.Capture.Layers {
			if l == i {
				return fmt.Sprintf("hidden_states.%d", i)
			}
		}
	}
	return ""
}

// dumpHolds lists what dump m holds, for messages.
func dumpHolds(m *capture.Manifest) string {
	var has []string
	for _, l := range m.Capture.Layers {
		has = append(has, fmt.Sprintf("model.layers.%d %s", l, m.Capture.What))
	}
	for _, si := range m.Capture.Sites {
		has = append(has, si.Site+" "+si.Tensor)
	}
	return strings.Join(has, "; ")
}

// seqNeed is what a stop needs of one sequence of a dump: at least rows
// rows (exactly rows where exact: a prefill patch), of cols columns.
type seqNeed struct {
	rows, cols int
	exact      bool
}

// readDumpSeqs reads key and input_ids of the sequences of the dump at dir
// that need names (by the sequence's index in the dump's input), the
// others not at all: patch and compare of one sequence against a capture
// job's dump of thousands read every sequence whole, as f32, before
// looking at the batch (memory without bound). A sequence whose
// manifest record of key does not have the rows and columns needed is
// refused from the record, before its file is read. ints admits a tensor
// of an integer dtype (compare's router ids); patch takes floats alone.
func readDumpSeqs(dir string, m *capture.Manifest, key string, need map[int]seqNeed, ints bool) (map[int]patchSeq, error) {
	out := map[int]patchSeq{}
	for _, sr := range m.Sequences {
		nd, ok := need[sr.Index]
		if !ok {
			continue
		}
		if tr, ok := sr.Tensors[key]; ok {
			sh := tr.Shape
			if len(sh) != 2 || sh[1] != nd.cols || sh[0] < nd.rows || (nd.exact && sh[0] != nd.rows) {
				want := fmt.Sprintf("[%d, %d]", nd.rows, nd.cols)
				if !nd.exact {
					want = fmt.Sprintf("at least %d rows of %d", nd.rows, nd.cols)
				}
				return nil, fmt.Errorf("%w: dump %s: %s of sequence %d is %s (manifest.json), this stop needs %s", client.ErrMismatch, dir, key, sr.Index, tensor.ShapeString(sh), want)
			}
		}
		p := filepath.Join(dir, sr.File)
		f, err := safetensors.Open(p)
		if err != nil {
			return nil, err
		}
		ps, err := readPatchSeq(f, key, sr, ints)
		f.Close()
		if err != nil && !strings.Contains(err.Error(), p) { // the reader's errors may name the file already
			err = fmt.Errorf("%s: %w", p, err)
		}
		if err != nil {
			return nil, err
		}
		out[sr.Index] = ps
	}
	return out, nil
}

// readPatchSeq copies tensor key and input_ids out of f (whose mapping
// ends when f is closed) and checks each against the manifest's record of
// the sequence (dtype, shape, sha256 of its bytes): a file changed after
// the dump was written (a NaN written into it, a tensor cast or replaced)
// was grafted into the pass, or compared against, as if it were the dump.
// An integer tensor is refused unless ints.
func readPatchSeq(f *safetensors.File, key string, rec capture.SeqRecord, ints bool) (patchSeq, error) {
	t, err := f.Copy(key) // another program's dump may be rewritten while read: an error, not SIGBUS
	if err != nil {
		return patchSeq{}, err
	}
	ids, err := f.Copy("input_ids")
	if err != nil {
		return patchSeq{}, err
	}
	for _, c := range []struct {
		name string
		t    *tensor.Tensor
	}{{key, t}, {"input_ids", ids}} {
		if err := matchesRecord(c.name, c.t, rec); err != nil {
			return patchSeq{}, err
		}
	}
	if !t.DType.IsFloat() && !(ints && (t.DType == tensor.I64 || t.DType == tensor.I32)) {
		return patchSeq{}, fmt.Errorf("%w: %s is %s, not a float dtype", client.ErrMismatch, key, t.DType)
	}
	if len(t.Shape) != 2 || t.Shape[0] != ids.Numel() {
		return patchSeq{}, fmt.Errorf("%w: %s is %s for %d input_ids", client.ErrMismatch, key, tensor.ShapeString(t.Shape), ids.Numel())
	}
	ps := patchSeq{rows: tensor.FromF32(t.ToF32(), t.Shape...), integer: !t.DType.IsFloat()}
	for i := range ids.Numel() {
		ps.ids = append(ps.ids, int32(ids.Int(i)))
	}
	return ps, nil
}

// matchesRecord checks tensor name t of a dump's sequence file against the
// manifest's record rec of it: there, with the same dtype, shape and
// sha256 of its bytes.
func matchesRecord(name string, t *tensor.Tensor, rec capture.SeqRecord) error {
	tr, ok := rec.Tensors[name]
	switch {
	case !ok:
		return fmt.Errorf("the dump's manifest.json lists no tensor %s for sequence %d: the file is not the one the dump wrote", name, rec.Index)
	case tr.DType != t.DType.SafetensorsName() || !slices.Equal(tr.Shape, t.Shape):
		return fmt.Errorf("%s is %s %s, the dump's manifest.json records %s %s: the file changed after the dump was written (`check` of the dump says more)", name, t.DType.SafetensorsName(), tensor.ShapeString(t.Shape), tr.DType, tensor.ShapeString(tr.Shape))
	}
	if h := sha256.Sum256(t.Data); hex.EncodeToString(h[:]) != tr.SHA256 {
		return fmt.Errorf("%s's sha256 differs from the one the dump's manifest.json records: the file changed after the dump was written (`check` of the dump says more)", name)
	}
	return nil
}

// Patch replaces a tensor of the stopped site, or arms the replacement for
// the next run when req.Site is given (see client.PatchRequest).
func (s *Session) Patch(req client.PatchRequest) (client.Edit, error) {
	site := req.Site
	if site != "" {
		sites, err := s.matchSites(site)
		if err != nil {
			return client.Edit{}, err
		}
		if len(sites) != 1 {
			return client.Edit{}, fmt.Errorf("patch: %s matches %d sites: name one", site, len(sites))
		}
		site = sites[0].Path
		if !slices.Contains(sites[0].Tensors, req.Tensor) {
			return client.Edit{}, fmt.Errorf("patch: %w: %s shows %s, not %q", client.ErrNoTensor, site, strings.Join(sites[0].Tensors, ", "), req.Tensor)
		}
	} else {
		st := s.Stopped()
		if st == nil {
			return client.Edit{}, fmt.Errorf("patch: %w: `patch SITE.TENSOR from DUMP` arms a patch for the next run", client.ErrNotStopped)
		}
		site = st.Site
	}
	m, key, err := patchSource(req.Dump, site, req.Tensor)
	if err != nil {
		return client.Edit{}, err
	}
	e := &edit{Edit: client.Edit{Tensor: req.Tensor, Rank: -1, What: fmt.Sprintf("= %s from %s", key, req.Dump)}}
	e.plan = s.patchPlan(req, m, key, e)
	if req.Site == "" {
		return s.applyNow(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iv.nextID++
	e.ID, e.Site, e.Armed, e.siteIdx = s.iv.nextID, site, true, s.E.Tree.Site(site).Index
	e.Text = fmt.Sprintf("%s %s %s (step 0, every rank) armed", site, req.Tensor, e.What)
	s.iv.pending = append(s.iv.pending, e)
	s.iv.npending.Store(int32(len(s.iv.pending)))
	return e.Edit, nil
}

// patchPlan computes each rank's rows of the patched tensor: for every
// sequence of the batch (or req.Seq), the dump's rows at the tokens'
// positions, each rank taking the columns it holds. It reads the dump's
// sequences there (those of the batch), checked against the manifest
// (m, holding the tensor as key): an armed patch reads the dump as it is
// when the run reaches the site, and a file changed since the dump was
// written is refused then.
func (s *Session) patchPlan(req client.PatchRequest, m *capture.Manifest, key string, e *edit) func(st *stopCtx) ([]rankWrite, error) {
	return func(st *stopCtx) ([]rankWrite, error) {
		if err := checkWritable(st, req.Tensor); err != nil {
			return nil, err
		}
		b := st.ev.Batch
		if req.Seq >= len(b.SeqLens) {
			return nil, fmt.Errorf("patch --seq %d: the batch has %s", req.Seq, plural.N(len(b.SeqLens), "sequence"))
		}
		p0, _ := st.views[0].Tensor(req.Tensor)
		if p0.Shard.Kind == model.Partial {
			return nil, fmt.Errorf("patch: %s at %s is a partial sum (one addend per rank): patch its all-reduced output", req.Tensor, st.ev.Site.Path)
		}
		if rows(p0) != b.Tokens() {
			return nil, fmt.Errorf("patch: %w: %s at %s has %d rows, not one per token of the batch (%d)", client.ErrMismatch, req.Tensor, st.ev.Site.Path, rows(p0), b.Tokens())
		}
		full := cols(p0)
		if p0.Shard.Kind == model.Sharded {
			full = p0.Shard.Full
		}
		need := map[int]seqNeed{}
		for sq, n := range b.SeqLens {
			if req.Seq < 0 || sq == req.Seq {
				last := int(b.Pos[b.SeqStart(sq)+n-1]) + 1
				need[b.Seqs[sq]] = seqNeed{rows: last, cols: full, exact: st.ev.Step == 0}
			}
		}
		src, err := readDumpSeqs(req.Dump, m, key, need, false)
		if err != nil {
			return nil, fmt.Errorf("patch: %w", err)
		}
		var ws []rankWrite
		var notes []string
		for sq, n := range b.SeqLens {
			if req.Seq >= 0 && sq != req.Seq {
				continue
			}
			num := b.Seqs[sq]
			ps, ok := src[num]
			if !ok {
				return nil, fmt.Errorf("patch: %w: the dump has no sequence %d", client.ErrMismatch, num)
			}
			r0 := b.SeqStart(sq)
			last := int(b.Pos[r0+n-1]) + 1
			if ps.rows.Cols() != full {
				return nil, fmt.Errorf("patch: %w: the dump's %s is [%d, %d], the site's %s is [%d, %d]", client.ErrMismatch, req.Tensor, ps.rows.Rows(), ps.rows.Cols(), req.Tensor, b.Tokens(), full)
			}
			if (st.ev.Step == 0 && ps.rows.Rows() != n) || ps.rows.Rows() < last {
				return nil, fmt.Errorf("patch: %w: sequence %d has %s, the dump's sequence %d has %d: patching needs the same positions", client.ErrMismatch, num, plural.N(last, "token"), num, ps.rows.Rows())
			}
			differ := 0
			for i := range n {
				t := r0 + i
				if ps.ids[b.Pos[t]] != b.IDs[t] {
					differ++
				}
			}
			notes = append(notes, fmt.Sprintf("seq %d: %d of %s differ", num, differ, plural.N(n, "id")))
			for r, v := range st.views {
				t, _ := v.Tensor(req.Tensor)
				c := cols(t)
				h := toHost(v, t, r0, r0+n, 0, c)
				hv, sv := h.F32(), ps.rows.F32()
				off := 0
				if t.Shard.Kind == model.Sharded {
					off = t.Shard.Start
				}
				for i := range n {
					pos := int(b.Pos[r0+i])
					copy(hv[i*c:(i+1)*c], sv[pos*full+off:pos*full+off+c])
				}
				ws = append(ws, rankWrite{rank: r, name: req.Tensor, r0: r0, r1: r0 + n, data: h})
			}
		}
		e.Rows, e.Cols = client.Range{Lo: 0, Hi: b.Tokens()}, client.Range{Lo: 0, Hi: full}
		if req.Seq >= 0 {
			e.Rows = client.Range{Lo: b.SeqStart(req.Seq), Hi: b.SeqStart(req.Seq) + b.SeqLens[req.Seq]}
		}
		e.What = strings.SplitN(e.What, " (", 2)[0] + " (" + strings.Join(notes, "; ") + ")"
		return ws, nil
	}
}
