package repl

import (
	"bytes"
	"testing"

	"hsdb/inspect/client"
)

// watchStub records the tensor and condition `watch` asks the client for.
type watchStub struct {
	stubClient
	tensor, cond string
}

func (c *watchStub) Watch(tensor, cond string) (client.Breakpoint, error) {
	c.tensor, c.cond = tensor, cond
	return client.Breakpoint{ID: 1, Kind: "watch", Tensor: tensor, Cond: cond, Enabled: true, Sites: 1}, nil
}

// TestWatchTabAfterTensor: `watch stream<TAB>absmax > 5` cut the tensor
// name at a space only, so it was refused with "a condition compares a
// statistic of the tensor: watch stream\tabsmax > 5" (the condition left
// was "> 5"), and `watch stream<TAB>nan` asked for a tensor "stream\tnan"
// with no condition. A tab ends the name as it does for print and set var
// (cutIndex); the client is asked for tensor "stream" and the condition as
// typed after it.
func TestWatchTabAfterTensor(t *testing.T) {
	for line, want := range map[string][2]string{
		"watch stream\tabsmax > 5":    {"stream", "absmax > 5"},
		"watch stream\t\tnan":         {"stream", "nan"},
		"watch stream \tabsmax > 5":   {"stream", "absmax > 5"},
		"watch residual absmax > 1e4": {"residual", "absmax > 1e4"},
	} {
		c := &watchStub{}
		buf := &bytes.Buffer{}
		term := New(c, buf, Config{})
		if err := term.Exec(line); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if c.tensor != want[0] || c.cond != want[1] {
			t.Fatalf("%q: Watch(%q, %q), want Watch(%q, %q)", line, c.tensor, c.cond, want[0], want[1])
		}
	}
}
