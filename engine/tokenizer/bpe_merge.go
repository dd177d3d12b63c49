package tokenizer

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
// merge rank), llama2.c run.c's encode loop (priority = −score, its
// strict '>' scan picking the leftmost best) and tiktoken's
// _byte_pair_merge (priority = rank of the merged bytes), done with a heap
// of candidate pairs instead of rescans: O(n log n).
func mergePairs(syms []bpeSym, pair func(left, right int32) (merged int32, prio float64, ok bool)) {
	var h candHeap
	mergePairsWith(syms, &h, pair)
}

// mergePairsWith is mergePairs with a caller's heap, whose storage it
// reuses (it is left empty).
func mergePairsWith(syms []bpeSym, h *candHeap, pair func(left, right int32) (merged int32, prio float64, ok bool)) {
	*h = (*h)[:0]
	push := func(left int) {
		if left < 0 || syms[left].next < 0 {
			return
		}
		r := syms[left].next
		if id, prio, ok := pair(syms[left].id, syms[r].id); ok {
			h.push(mergeCand{prio: prio, pos: left, merged: id, left: syms[left].id, right: syms[r].id})
		}
	}
	for i := 0; i+1 < len(syms); i++ {
		push(i)
	}
	for len(*h) > 0 {
		c := h.pop()
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

// candHeap is a binary min-heap of candidates: the lowest priority first,
// then the leftmost position (typed, so pushing allocates nothing beyond
// the slice).
type candHeap []mergeCand

func (h candHeap) less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio < h[j].prio
	}
	return h[i].pos < h[j].pos
}

func (h *candHeap) push(c mergeCand) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *candHeap) pop() mergeCand {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a.less(l, m) {
			m = l
		}
		if l+1 < n && a.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
