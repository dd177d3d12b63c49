package debug

import (
	"testing"

	"hsdb/inspect/client"
)

// TestSeqNumbers: --seq's error named a step's sequences as Go prints a
// slice ("[0 1]"); it names them as typed. Expected strings by hand.
func TestSeqNumbers(t *testing.T) {
	for _, c := range []struct {
		seqs []int
		want string
	}{
		{[]int{0}, "1 sequence (0)"},
		{[]int{0, 1}, "2 sequences (0-1)"},
		{[]int{3, 4, 5}, "3 sequences (3-5)"},
		{[]int{0, 2, 5}, "3 sequences (0, 2, 5)"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}, "10 sequences (0, 2, 4, 6, 8, 10, 12, 14, …)"},
	} {
		if got := seqNumbers(c.seqs); got != c.want {
			t.Errorf("seqNumbers(%v) = %q, want %q", c.seqs, got, c.want)
		}
	}
}

// TestTokensWithoutRowNamed: --tokens selecting no row of a tensor with a
// row per sequence (lm_head's logits: the last token's) named the rows it
// holds as Go prints a slice ("[2 4]"); by hand, batch of 3 + 2 tokens:
// the last tokens are rows 2 and 4.
func TestTokensWithoutRowNamed(t *testing.T) {
	s := newSession(t, 1)
	if err := s.SetBatch([][]int32{{1, 403, 407}, {1, 400}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("lm_head", "", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Print("logits", client.Slice{Rank: -1, Seq: -1, Tokens: &client.Range{Lo: 0, Hi: 1}})
	want := "logits has no row for tokens 0:1 of the batch (it holds rows for batch tokens 2, 4 only)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
