package main

import (
	"os"
	"strings"
	"testing"
)

// TestEPAndMoETPContradict: `--ep --moe tp` asks for whole experts per
// rank and for each expert split over the ranks at once; it was taken
// silently (--ep won). It is refused naming both, in every command of the
// model group; each alone is taken.
func TestEPAndMoETPContradict(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3"
	want := "--ep and --moe tp contradict each other"
	for _, args := range [][]string{
		{"--model", model, "--tp", "2", "--ep", "--moe", "tp", "-x", os.DevNull},
		{"plan", "--model", model, "--tp", "2", "--ep", "--moe", "tp"},
		{"generate", "--model", model, "--tp", "2", "--ep", "--moe", "tp", "--ids", "1,2", "-n", "3"},
	} {
		if _, errs, code := runHsdb(t, args...); code == 0 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	for _, flags := range [][]string{{"--ep"}, {"--moe", "tp"}, {"--moe", "ep"}} {
		args := append([]string{"plan", "--model", model, "--tp", "2"}, flags...)
		if out, errs, code := runHsdb(t, args...); code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}
