package repl

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// setVarClient answers only what `set var` asks across the seam (Model
// for --rank, SetVar), recording the request; any other call panics (the
// embedded interface is nil), which Exec turns into an "internal error".
type setVarClient struct {
	client.Client
	req *client.EditRequest
}

func (c *setVarClient) OnTrace(func(client.TraceLine)) {}
func (c *setVarClient) Model() (client.ModelInfo, error) {
	return client.ModelInfo{World: 2}, nil
}
func (c *setVarClient) SetVar(req client.EditRequest) (client.Edit, error) {
	c.req = &req
	return client.Edit{ID: 1, Text: req.Tensor}, nil
}

// FuzzSetVar: the text after `set var` (seeds: the README's and the
// help's forms: an index, an operator, a value written apart, the flags)
// parsed by the REPL with a stub client, so an execution is microseconds
// and needs no model. Every line is refused with an error or becomes one
// edit request: a tensor name without spaces or '[', an operator of
// = * / + -, a value that is a number (NaN only as the written word nan),
// --rank within the stub's 2 ranks; no panic ("internal error").
func FuzzSetVar(f *testing.F) {
	for _, s := range []string{
		"hidden_states[0:3, -1] = 0",
		"stream[2, :8] = * 0.5 --rank 1",
		"stream = stream + 1 --persist",
		"residual[-1] = nan --seq 0 --tokens 1:3",
		"stream [0, 4:] = - 2",
		"stream = -inf",
		"stream = 1e400",
		"hidden_states[0, 0]=+1 --rank=0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 256 || strings.ContainsAny(s, "\n\r") {
			return
		}
		c := &setVarClient{}
		term := New(c, &bytes.Buffer{}, Config{})
		err := term.Exec("set var " + s)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("set var %s: %v", s, err)
			}
			if c.req != nil {
				t.Fatalf("set var %s: an error after the request was sent: %v", s, err)
			}
			return
		}
		r := c.req
		if r == nil {
			t.Fatalf("set var %s: no error and no request", s)
		}
		// A stray ']' stays in the name ("]0"): the session then names
		// the tensor it does not have, which is error enough.
		if r.Tensor == "" || strings.ContainsAny(r.Tensor, " \t[") {
			t.Fatalf("set var %s: tensor %q", s, r.Tensor)
		}
		if !strings.Contains("=*/+-", r.Op) || len(r.Op) != 1 {
			t.Fatalf("set var %s: op %q", s, r.Op)
		}
		if math.IsNaN(r.Value) && !strings.Contains(strings.ToLower(s), "nan") {
			t.Fatalf("set var %s: NaN from no nan", s)
		}
		if r.Slice.Rank >= 2 {
			t.Fatalf("set var %s: --rank %d of 2 ranks accepted", s, r.Slice.Rank)
		}
	})
}
