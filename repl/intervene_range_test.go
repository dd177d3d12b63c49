package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetVarOutOfRangeLiteral: a number beyond float64's range is +Inf or
// -Inf (1e-400 is 0), as IEEE 754 and Python's float() round it and as
// `break … if` reads it (cases #25), in `set var` and in `inject`'s value
// (which then refuses +Inf by name), instead of "want a number". Expected
// by hand: row 0's two first columns +Inf and row 1's first -Inf make 3
// Inf in the printed stream.
func TestSetVarOutOfRangeLiteral(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.hsdb")
	body := "input ids 1,403,407\nbreak layers.2\nrun\nset var stream[0, 0:2] = 1e400\nset var stream[1, 0] = -1e999\nset var stream[2, 0] = * 1e-400\nprint stream\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runScript(t, 1, script, false)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"stream[0:1, 0:2] = +Inf (step 0",
		"stream[1:2, 0:1] = -Inf (step 0",
		"stream[2:3, 0:1] * 0 (step 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "0     [3, 64]") {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) != 13 || f[11] != "0" || f[12] != "3" {
		t.Errorf("print stream: want 0 NaN and 3 Inf, got %q", row)
	}
	// A value float32 cannot hold is written as float32 rounds it, and the
	// edit says what was written: 1e39 is +Inf, 1e-46 is 0 (it said
	// "= 1e+39" while the tensor held +Inf).
	if err := os.WriteFile(script, []byte("input ids 1,403,407\nbreak layers.2\nrun\nset var stream[0, 0] = 1e39\nset var stream[1, 0] = 1e-46\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runScript(t, 1, script, false)
	for _, want := range []string{"stream[0:1, 0:1] = +Inf (step 0", "stream[1:2, 0:1] = 0 (step 0"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d: missing %q in\n%s\n%s", code, want, out, errs)
		}
	}
	// inject reads 1e400 as +Inf too, and refuses it as a VALUE no fault
	// can use (scaling a capture by +Inf imitates no pipeline's bug).
	if err := os.WriteFile(script, []byte("inject scale-residual 1e400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runScript(t, 1, script, false)
	if code != 1 || !strings.Contains(out+errs, "inject scale-residual: VALUE +Inf: want a finite number") {
		t.Errorf("inject scale-residual 1e400: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestSaveBadPathAndFrameMoves: `save` to a path that cannot be a file is
// refused before anything is computed, naming what is wrong with the path
// (not the temporary file's name); `up`/`down` past the ends say from
// which frame and how far the end is. Expectations by hand from the paths
// and from bt at model.layers.2 (#0 the stopped site, #1 model, #2 the
// root).
func TestSaveBadPathAndFrameMoves(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.jsonl")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d.npy"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "s.hsdb")
	body := "set errors continue\ninput ids 1,403,407\nbreak layers.2\nrun\n" +
		"save stream " + filepath.Join(dir, "missing", "x.npy") + "\n" +
		"save stream " + filepath.Join(dir, "missing", "x.safetensors") + "\n" +
		"save stream " + filepath.Join(file, "x.npy") + "\n" +
		"save stream " + filepath.Join(dir, "d.npy") + "\n" +
		"up 5\ndown 3\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, errs := runScript(t, 1, script, false)
	for _, want := range []string{
		"save " + filepath.Join(dir, "missing", "x.npy") + ": directory " + filepath.Join(dir, "missing") + " does not exist",
		"save " + filepath.Join(dir, "missing", "x.safetensors") + ": directory " + filepath.Join(dir, "missing") + " does not exist",
		"save " + filepath.Join(file, "x.npy") + ": " + file + " is not a directory",
		"save " + filepath.Join(dir, "d.npy") + ": a directory has that name",
		"up 5: frame #0 (model.layers.2) is 1 below the outermost frame #1 (model): you can go up at most 1",
		"down 3: bottom (innermost) frame #0 selected (model.layers.2, LlamaDecoderLayer, the site the pass stopped at): you cannot go down",
	} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("missing %q in\n%s%s", want, out, errs)
		}
	}
	if strings.Contains(out+errs, ".tmp-") {
		t.Errorf("an error names a temporary file:\n%s%s", out, errs)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "d.npy", "*")); len(m) != 0 {
		t.Errorf("files left in d.npy: %v", m)
	}
}

// TestPrintListsFrameTensors: `print` without a name lists the tensors of
// the frame the queries look at (frame/up/down), not the stopped site's:
// at model.layers.1.self_attn.attn, frame 2 (model.layers.1) shows its
// inputs input and input_residual, frame 3 (model) has none (and `print
// input` there says so, not "shows , not"); back at the site, its own q,
// k, attn_out (bt's shapes, by hand).
func TestPrintListsFrameTensors(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.hsdb")
	body := "set errors continue\ninput ids 1,403,407\nbreak layers.1.self_attn.attn\nrun\nframe 2\nprint\nframe 3\nprint\nprint input\nframe 0\nprint\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, errs := runScript(t, 1, script, false)
	for _, want := range []string{
		"print: which tensor? frame #2 model.layers.1 shows input, input_residual",
		"print: frame #3 model has no tensors (this module has no inputs)",
		"no such tensor: model shows no tensors (a module without inputs), not \"input\"",
		"print: which tensor? model.layers.1.self_attn.attn shows q, k, attn_out",
	} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("missing %q in\n%s%s", want, out, errs)
		}
	}
}

// TestFrameNotStoppedOnce: `frame N` with no stop says so once, with the
// hint `up` and `down` give, prefixed by the command as typed; it said
// "frame: frame: the forward pass is not stopped at a site" (the debugger
// and the command both named it).
func TestFrameNotStoppedOnce(t *testing.T) {
	f := newFake(t, 1)
	for _, cmd := range []string{"frame 1", "up", "down"} {
		err := f.Term.Exec(cmd)
		want := cmd + ": the forward pass is not stopped at a site: `run` to a breakpoint first"
		if err == nil || err.Error() != want {
			t.Errorf("%s: %q, want %q", cmd, err, want)
		}
	}
}
