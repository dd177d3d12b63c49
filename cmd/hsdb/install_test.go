package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallWithoutLibcuda runs scripts/install.sh into a GOBIN whose
// path holds spaces, where an earlier install left an hsdb-cuda-worker,
// with a C compiler that cannot link -lcuda (a wrapper around gcc that
// fails as ld does when no libcuda.so is found). Expected, by hand: the
// front end is installed and runs; the worker is not built, in one
// sentence naming -lcuda and scripts/setup-cuda.sh (not the linker's
// command line); the stale worker is removed (hsdb would otherwise use a
// worker built from other sources); exit 0. Run twice: the same.
func TestInstallWithoutLibcuda(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: cgo cannot build here")
	}
	dir := t.TempDir()
	cc := filepath.Join(dir, "cc")
	wrapper := "#!/bin/sh\ncase \" $* \" in *\" -lcuda \"*) echo '/usr/bin/ld: cannot find -lcuda: No such file or directory' >&2; exit 1;; esac\nexec " + gcc + " \"$@\"\n"
	if err := os.WriteFile(cc, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(dir, "prefix with spaces", "bin")
	if err := os.MkdirAll(gobin, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(gobin, cudaWorkerName)
	for round := 0; round < 2; round++ {
		if err := os.WriteFile(stale, []byte("#!/bin/sh\necho '1 GPU(s)'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "../../scripts/install.sh")
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "CC="+cc)
		out, err := cmd.CombinedOutput()
		text := string(out)
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, text)
		}
		cuda := strings.Contains(text, "hsdb-cuda-worker not installed: "+cc+" cannot link -lcuda") && strings.Contains(text, "scripts/setup-cuda.sh installs the stub")
		noHeader := strings.Contains(text, "hsdb-cuda-worker not installed: no cuda.h")
		if !(cuda || noHeader) || strings.Contains(text, "collect2") || !strings.Contains(text, "installed "+filepath.Join(gobin, "hsdb")) ||
			!strings.Contains(text, "removed "+stale+" from an earlier install") {
			t.Errorf("round %d:\n%s", round, text)
		}
		if _, err := os.Lstat(stale); !os.IsNotExist(err) {
			t.Errorf("round %d: the stale worker is still there (%v)", round, err)
		}
		v, err := exec.Command(filepath.Join(gobin, "hsdb"), "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(v), "hsdb ") {
			t.Errorf("round %d: installed hsdb --version: %v %s", round, err, v)
		}
	}
	// Without GOBIN, go install writes to the first GOPATH entry's bin
	// (GOPATH a list); the script says that path, not "a:b/bin".
	mc, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	first, second := filepath.Join(dir, "gopath one"), filepath.Join(dir, "gopath2")
	cmd := exec.Command("bash", "../../scripts/install.sh")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOBIN=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GOPATH="+first+":"+second, "GOMODCACHE="+strings.TrimSpace(string(mc)), "CC="+cc)
	out, err := cmd.CombinedOutput()
	if want := "installed " + filepath.Join(first, "bin", "hsdb") + "\n"; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("GOPATH list: %v\n%s\nwant it to start %q", err, out, want)
	}
	if _, err := os.Stat(filepath.Join(first, "bin", "hsdb")); err != nil {
		t.Errorf("GOPATH list: %v", err)
	}
}
