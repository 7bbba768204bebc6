package engine

// deadlines is a min-heap of states by deadline. Each state sits in it at
// most once (heapIdx), so it never holds more than the state cache.
// A state's deadline may be earlier than its real one (an occurrence only
// moves the idle deadline later, and is not worth a heap fix); the engine
// recomputes the real deadline when the entry comes due.
type deadlines []*state

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
		st.heapIdx = len(*h)
		*h = append(*h, st)
		h.up(st.heapIdx)
	case d < st.deadline:
		st.deadline = d
		h.up(st.heapIdx)
	}
}

// reschedule sets st's deadline to d, earlier or later.
func (h *deadlines) reschedule(st *state, d int64) {
	if st.heapIdx < 0 {
		h.schedule(st, d)
		return
	}
	st.deadline = d
	if !h.up(st.heapIdx) {
		h.down(st.heapIdx)
	}
}

func (h *deadlines) remove(st *state) {
	i := st.heapIdx
	if i < 0 {
		return
	}
	last := len(*h) - 1
	h.swap(i, last)
	(*h)[last] = nil
	*h = (*h)[:last]
	st.heapIdx = -1
	if i < last && !h.up(i) {
		h.down(i)
	}
}

func (h deadlines) less(i, j int) bool { return h[i].deadline < h[j].deadline }

func (h deadlines) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}

func (h deadlines) up(i int) (moved bool) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.swap(i, parent)
		i, moved = parent, true
	}
	return moved
}

func (h deadlines) down(i int) {
	for {
		small := i
		if l := 2*i + 1; l < len(h) && h.less(l, small) {
			small = l
		}
		if r := 2*i + 2; r < len(h) && h.less(r, small) {
			small = r
		}
		if small == i {
			return
		}
		h.swap(i, small)
		i = small
	}
}
