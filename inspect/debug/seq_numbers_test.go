package debug

import "testing"

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
