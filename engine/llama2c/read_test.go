package llama2c

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const stories = "../../testdata/stories260K/stories260K.bin"

// TestReadStories checks the header facts of stories260K (its README: dim
// 64, hidden_dim 172, 5 layers, 8 heads, 4 kv heads, vocab 512 shared,
// seq_len 512) and the HF tensor shapes.
func TestReadStories(t *testing.T) {
	ck, err := Read(stories)
	if err != nil {
		t.Fatal(err)
	}
	h := ck.Header
	if h != (Header{64, 172, 5, 8, 4, 512, 512}) || !ck.Shared {
		t.Fatalf("header %+v shared %v", h, ck.Shared)
	}
	want := map[string][]int{
		"model.embed_tokens.weight":              {512, 64},
		"model.layers.4.self_attn.k_proj.weight": {32, 64},
		"model.layers.0.mlp.down_proj.weight":    {64, 172},
		"model.layers.0.mlp.gate_proj.weight":    {172, 64},
		"model.norm.weight":                      {64},
	}
	for n, s := range want {
		got := ck.Tensors[n]
		if got == nil || len(got.Shape) != len(s) || got.Shape[0] != s[0] {
			t.Errorf("%s: %v, want %v", n, got, s)
		}
	}
	if len(ck.Tensors) != 1+5*9+1 {
		t.Errorf("%d tensors", len(ck.Tensors))
	}
}

// TestPermuteRoPE: for one head of size 4 with rows r0..r3, llama2.c pairs
// (r0,r1) and (r2,r3); HF pairs rows (0,2) and (1,3), so HF's order is
// r0, r2, r1, r3.
func TestPermuteRoPE(t *testing.T) {
	w := []float32{0, 0, 1, 1, 2, 2, 3, 3, 10, 10, 11, 11, 12, 12, 13, 13} // 2 heads × 4 rows × 2 cols
	got := PermuteRoPE(w, 2, 8, 2)
	want := []float32{0, 0, 2, 2, 1, 1, 3, 3, 10, 10, 12, 12, 11, 11, 13, 13}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
}

// TestReadErrors: truncated files and a bad header are named.
func TestReadErrors(t *testing.T) {
	data, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := map[string]struct {
		data []byte
		want string
	}{
		"short":     {data[:10], "shorter than the 28-byte header"},
		"truncated": {data[:len(data)/2], "array w1 [5 172 64] needs 220160 bytes"},
		"trailing":  {append(append([]byte{}, data...), 1, 2, 3, 4), "4 bytes left after the last array"},
		"badheader": {append([]byte{0, 0, 0, 0}, data[4:]...), "header field dim = 0"},
	}
	for name, c := range cases {
		p := filepath.Join(dir, name+".bin")
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want it to mention %q and the path", name, err, c.want)
		}
	}
}

// TestConvertForceReplacesOnlyConversions: --force replaces an earlier
// conversion but refuses a file, a directory with other files, and a
// directory whose safetensors another tool wrote (regression: --force
// deleted whatever --out named).
func TestConvertForceReplacesOnlyConversions(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m")
	if err := Convert(stories, nil, out, false); err != nil {
		t.Fatal(err)
	}
	if err := Convert(stories, []string{"../../testdata/stories260K/tok512.bin"}, out, true); err != nil {
		t.Fatalf("replacing an earlier conversion: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "tokenizer.bin")); err != nil {
		t.Fatal("replacement lacks the tokenizer")
	}
	precious := filepath.Join(dir, "precious")
	if err := os.MkdirAll(filepath.Join(precious, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(precious, "notes.txt"), []byte("important"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "afile.txt")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{precious, file, dir, "."} {
		err := Convert(stories, nil, target, true)
		if err == nil {
			t.Fatalf("--force over %s succeeded", target)
		}
	}
	if b, err := os.ReadFile(filepath.Join(precious, "notes.txt")); err != nil || string(b) != "important" {
		t.Fatalf("precious/notes.txt damaged: %q %v", b, err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep" {
		t.Fatalf("afile.txt damaged: %q %v", b, err)
	}
}

// TestConvertRefusesSymlink: --out naming a symbolic link — to an
// earlier conversion, or dangling — is refused with and without --force,
// naming it; the link and its target stay (the link was replaced by the
// new directory: with --force when it led to a conversion, without when it
// dangled, since os.Stat saw nothing there).
func TestConvertRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	conv := filepath.Join(dir, "m")
	if err := Convert(stories, nil, conv, false); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	dangling := filepath.Join(dir, "dangling")
	if os.Symlink(conv, link) != nil || os.Symlink(filepath.Join(dir, "nowhere"), dangling) != nil {
		t.Fatal("symlink")
	}
	for _, c := range []struct {
		path  string
		force bool
		want  string
	}{
		{link, true, "convert: " + link + " is a symbolic link, not an earlier conversion; refusing to replace it"},
		{link, false, "convert: " + link + " exists (use --force to replace an earlier conversion)"},
		{dangling, false, "convert: " + dangling + " exists (use --force to replace an earlier conversion)"},
		{dangling, true, "convert: " + dangling + " is a symbolic link, not an earlier conversion; refusing to replace it"},
	} {
		if err := Convert(stories, nil, c.path, c.force); err == nil || err.Error() != c.want {
			t.Errorf("%s (force %v): %v, want %q", c.path, c.force, err, c.want)
		}
		if st, err := os.Lstat(c.path); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link (%v)", c.path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(conv, "model.safetensors")); err != nil {
		t.Fatalf("the conversion the link led to: %v", err)
	}
}

// TestConvertChecksTokenizer: a file that is not a tokenizer of the
// checkpoint's vocabulary is refused before anything is written.
func TestConvertChecksTokenizer(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	err := Convert(stories, []string{"../../testdata/stories260K/README.md"}, out, false)
	if err == nil || !strings.Contains(err.Error(), "README.md") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("output written despite the bad tokenizer")
	}
}
