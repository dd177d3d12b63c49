package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// sourceHash recomputes what scripts/build-kernels.sh records: SHA-256 of
// NAME.cu followed by every *.cuh in name order.
func sourceHash(t *testing.T, name string) string {
	t.Helper()
	h := sha256.New()
	b, err := os.ReadFile(name + ".cu")
	if err != nil {
		t.Fatal(err)
	}
	h.Write(b)
	hdrs, err := filepath.Glob("*.cuh")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(hdrs)
	for _, f := range hdrs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestPTXFresh fails when a .cu (or a shared header) changed after its .ptx
// was generated, or when a .cu has no .ptx at all, or a .ptx no source.
func TestPTXFresh(t *testing.T) {
	srcs, err := filepath.Glob("*.cu")
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) == 0 {
		t.Fatal("no kernels/*.cu found")
	}
	seen := map[string]bool{}
	for _, s := range srcs {
		name := strings.TrimSuffix(s, ".cu")
		seen[name] = true
		m, err := Lookup(name)
		if err != nil {
			t.Errorf("%s has no embedded PTX: run scripts/build-kernels.sh %s (%v)", s, name, err)
			continue
		}
		if want := sourceHash(t, name); m.SourceSHA256 != want {
			t.Errorf("ptx/%s.ptx is stale: built from source %s, %s.cu + headers now hash to %s; run scripts/build-kernels.sh %s",
				name, m.SourceSHA256, name, want, name)
		}
	}
	for _, n := range Names() {
		if !seen[n] {
			t.Errorf("ptx/%s.ptx has no %s.cu source", n, n)
		}
	}
}

// TestEntryPoints checks that every extern "C" __global__ function in a .cu
// appears as a .visible .entry in its PTX (a function lost to a macro typo
// would otherwise surface only as a launch failure on the GPU). The names
// are found independently: from the macro instantiations of the source by
// regular expression, and from the PTX's entry lines.
func TestEntryPoints(t *testing.T) {
	entry := regexp.MustCompile(`(?m)^\.visible \.entry ([A-Za-z0-9_]+)\(`)
	for _, n := range Names() {
		m, _ := Lookup(n)
		got := map[string]bool{}
		for _, e := range entry.FindAllStringSubmatch(m.PTX, -1) {
			got[e[1]] = true
		}
		if len(got) == 0 {
			t.Errorf("ptx/%s.ptx has no entry points", n)
		}
		src, err := os.ReadFile(n + ".cu")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range declaredKernels(string(src)) {
			if !got[want] {
				t.Errorf("%s.cu declares %s but ptx/%s.ptx has no such entry", n, want, n)
			}
		}
	}
}

// declaredKernels expands the `__global__ void NAME_##name(` declarations
// of a module for the dtypes of its instantiation lines (HSDB_DTYPES(INST)
// gives f32, bf16, f16; other macros name their dtypes in their calls).
func declaredKernels(src string) []string {
	var out []string
	plain := regexp.MustCompile(`__global__ void (?:__launch_bounds__\([^)]*\) )?([a-z0-9_]+)\(`) // launch bounds before a name made by a macro: no match
	for _, m := range plain.FindAllStringSubmatch(src, -1) {
		if m[1] == "__launch_bounds__" {
			continue
		}
		out = append(out, m[1])
	}
	tmpl := regexp.MustCompile(`__global__ void ([a-z0-9_]+)##name\(`)
	if strings.Contains(src, "HSDB_DTYPES(INST)") {
		for _, m := range tmpl.FindAllStringSubmatch(src, -1) {
			for _, dt := range []string{"f32", "bf16", "f16"} {
				out = append(out, m[1]+dt)
			}
		}
	}
	return out
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("no_such_module")
	if !errors.Is(err, ErrUnknownModule) {
		t.Fatalf("Lookup(no_such_module) error = %v, want ErrUnknownModule", err)
	}
	if !strings.Contains(err.Error(), "rmsnorm") {
		t.Errorf("error %q should list the embedded modules", err)
	}
}
