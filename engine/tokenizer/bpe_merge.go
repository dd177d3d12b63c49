package tokenizer

import "container/heap"

// bpeSym is one symbol of a word being merged: its token id and its live
// neighbours' positions (-1 at the ends). A merged-away symbol is dead.
type bpeSym struct {
	id         int32
	prev, next int
	dead       bool
}

// newSyms returns ids as a linked list of symbols.
func newSyms(ids []int32) []bpeSym {
	syms := make([]bpeSym, len(ids))
	for i, id := range ids {
		syms[i] = bpeSym{id: id, prev: i - 1, next: i + 1}
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// liveIDs returns the ids of the live symbols from the first.
func liveIDs(syms []bpeSym, out []int32) []int32 {
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}

// mergePairs applies byte-pair merges to syms in place until none applies:
// pair(left, right) says whether two adjacent tokens merge, into which id,
// and with what priority; the lowest priority merges first, ties going to
// the leftmost pair. That is HF tokenizers' word.rs merge_all (priority =
// merge rank) and llama2.c run.c's encode loop (priority = −score, its
// strict '>' scan picking the leftmost best), done with a heap of candidate
// pairs instead of rescans: O(n log n).
func mergePairs(syms []bpeSym, pair func(left, right int32) (merged int32, prio float64, ok bool)) {
	h := &candHeap{}
	push := func(left int) {
		if left < 0 || syms[left].next < 0 {
			return
		}
		r := syms[left].next
		if id, prio, ok := pair(syms[left].id, syms[r].id); ok {
			heap.Push(h, mergeCand{prio: prio, pos: left, merged: id, left: syms[left].id, right: syms[r].id})
		}
	}
	for i := 0; i+1 < len(syms); i++ {
		push(i)
	}
	for h.Len() > 0 {
		c := heap.Pop(h).(mergeCand)
		l := &syms[c.pos]
		// A stale candidate: the pair at pos is no longer (left, right).
		if l.dead || l.id != c.left || l.next < 0 || syms[l.next].id != c.right {
			continue
		}
		r := l.next
		l.id = c.merged
		syms[r].dead = true
		l.next = syms[r].next
		if l.next >= 0 {
			syms[l.next].prev = c.pos
		}
		push(l.prev)
		push(c.pos)
	}
}

// mergeCand is a possible merge of the live pair starting at position pos.
type mergeCand struct {
	prio        float64
	pos         int
	merged      int32
	left, right int32
}

// candHeap pops the lowest priority first, then the leftmost position.
type candHeap []mergeCand

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio < h[j].prio
	}
	return h[i].pos < h[j].pos
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(mergeCand)) }
func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
