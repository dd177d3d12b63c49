package repl

import (
	"strings"
	"testing"
)

// TestInfoSubcommandArgs: `info SUB extra` names SUB and what it did not
// take, instead of listing the subcommands as if SUB were unknown; an
// unknown subcommand still lists them.
func TestInfoSubcommandArgs(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("info break x", `info break: unexpected "x"`)
	f.AssertError("info layers 2", `info layers: unexpected "2"`)
	f.AssertError("info model --fp9", `info model: unexpected "--fp9" (want --fp8, --quantized or --unused)`)
	f.AssertError("info model --fp8 --unused", `info model: unexpected "--fp8 --unused" (want --fp8, --quantized or --unused)`)
	err := f.Term.Exec("info nosuch")
	if err == nil || !strings.HasPrefix(err.Error(), "info: want one of model") || !strings.Contains(err.Error(), `not "nosuch"`) {
		t.Errorf("info nosuch: %v", err)
	}
}
