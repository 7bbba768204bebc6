package engine

import "container/heap"

// deadlines is a min-heap (container/heap) of states by deadline. Each
// state sits in it at most once (heapIdx), so it never holds more than the
// state cache. A state's deadline may be earlier than its real one (an
// occurrence only moves the idle deadline later, and is not worth a heap
// fix); the engine recomputes the real deadline when the entry comes due.
// Snapshots keep the heap's layout: states due at the same time come due
// in its order.
type deadlines []*state

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h deadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}

func (h *deadlines) Push(x any) {
	st := x.(*state)
	st.heapIdx = len(*h)
	*h = append(*h, st)
}

func (h *deadlines) Pop() any {
	old := *h
	st := old[len(old)-1]
	old[len(old)-1] = nil
	*h, st.heapIdx = old[:len(old)-1], -1
	return st
}

func (h deadlines) peek() *state {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

// schedule puts st in the heap at d, or moves it there if d is earlier.
func (h *deadlines) schedule(st *state, d int64) {
	switch {
	case st.heapIdx < 0:
		st.deadline = d
		heap.Push(h, st)
	case d < st.deadline:
		st.deadline = d
		heap.Fix(h, st.heapIdx)
	}
}

// reschedule sets st's deadline to d, earlier or later.
func (h *deadlines) reschedule(st *state, d int64) {
	if st.heapIdx < 0 {
		h.schedule(st, d)
		return
	}
	st.deadline = d
	heap.Fix(h, st.heapIdx)
}

func (h *deadlines) remove(st *state) {
	if st.heapIdx >= 0 {
		heap.Remove(h, st.heapIdx)
	}
}
