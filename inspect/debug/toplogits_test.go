package debug

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"

	"hsdb/inspect/client"
)

// llama2cPieces reads a llama2.c tokenizer.bin by its own layout (run.c's
// build_tokenizer: int32 max_token_length, then per token a float32 score,
// an int32 length and the piece's bytes).
func llama2cPieces(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := 4; i+8 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		i += 8
		if n < 0 || i+n > len(b) {
			t.Fatalf("%s: piece %d of %d bytes at %d overruns the file", path, len(out), n, i)
		}
		out = append(out, string(b[i:i+n]))
		i += n
	}
	return out
}

// runcDecode is run.c's decode(prev = BOS, id) written from run.c: one
// leading space dropped after BOS, a "<0xXX>" piece turned into its byte.
func runcDecode(piece string) string {
	if len(piece) > 0 && piece[0] == ' ' {
		piece = piece[1:]
	}
	if len(piece) == 6 && piece[:3] == "<0x" && piece[5] == '>' {
		if v, err := strconv.ParseUint(piece[3:5], 16, 8); err == nil {
			return string([]byte{byte(v)})
		}
	}
	return piece
}

// top logits at lm_head: the K channels of largest |logit| are those found
// here by scanning the logits an observer beside the debugger recorded
// (ties by lower index, as a stable sort leaves them), each with its value
// and its token's text decoded as run.c decodes a token after BOS, from
// tok512.bin read here; at --tp 1 and 2 on every device.
func TestTopLogitsDecoded(t *testing.T) {
	const k = 5
	pieces := llama2cPieces(t, "../../testdata/stories260K/tok512.bin")
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, tp := range []int{1, 2} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				s := newSessionOn(t, dev, tp)
				tok, err := s.E.Tokenizer() // as cmd/hsdb gives the session its model's tokenizer
				if err != nil || tok == nil {
					t.Fatalf("stories260K's tokenizer: %v", err)
				}
				s.Tok = tok
				rec := &logitsRec{}
				s.Observers = append(s.Observers, rec)
				if _, err := s.Break("lm_head", "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				top, err := s.Top("logits", k, client.All)
				if err != nil {
					t.Fatal(err)
				}
				done(t)(s.Continue())
				if len(rec.got) != 1 {
					t.Fatalf("%d logits recorded", len(rec.got))
				}
				v := rec.got[0].F32()
				V := s.E.Dims.Vocab
				idx := make([]int, len(v))
				for i := range idx {
					idx[i] = i
				}
				sort.SliceStable(idx, func(a, b int) bool { return math.Abs(float64(v[idx[a]])) > math.Abs(float64(v[idx[b]])) })
				if len(top.Channels) != k {
					t.Fatalf("%d channels, want %d", len(top.Channels), k)
				}
				for j, c := range top.Channels {
					row, col := idx[j]/V, idx[j]%V
					if c.Row != row || c.Col != col || c.Value != float64(v[idx[j]]) {
						t.Errorf("#%d: row %d id %d = %g, want row %d id %d = %g", j, c.Row, c.Col, c.Value, row, col, v[idx[j]])
					}
					if want := runcDecode(pieces[col]); c.Text != want {
						t.Errorf("#%d: id %d decoded %q, run.c's decode %q", j, col, c.Text, want)
					}
				}
			})
		}
	})
}
