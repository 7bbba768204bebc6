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
	moved := (*h)[last]
	(*h)[last] = nil
	*h = (*h)[:last]
	st.heapIdx = -1
	if i < last { // the last state takes st's place, then finds its own
		(*h)[i], moved.heapIdx = moved, i
		if !h.up(i) {
			h.down(i)
		}
	}
}

func (h deadlines) less(i, j int) bool { return h[i].deadline < h[j].deadline }

// up moves the state at i towards the root while it is due before its
// parent, and reports whether it moved. It moves the parents down into
// the hole and writes the state once, where swapping did at every level:
// the same heap, in fewer steps.
func (h deadlines) up(i int) (moved bool) {
	st := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		p := h[parent]
		if st.deadline >= p.deadline {
			break
		}
		h[i], p.heapIdx = p, i
		i, moved = parent, true
	}
	h[i], st.heapIdx = st, i
	return moved
}

// down moves the state at i towards the leaves while a child is due
// before it, the earlier child first (the left one on a tie), as up does.
// It is the same heap in fewer steps: the hole left by the state goes down
// the path of earlier children to a leaf, one comparison per level (the
// two children), then the state climbs back up that path past every
// state not due before it, where comparing the state with both children
// at each level took two. A state that leaves the cache under churn is the
// root, the state taking its place the latest: it climbs no level.
func (h deadlines) down(i int) {
	st := h[i]
	top, n := i, len(h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].deadline < h[c].deadline {
			c = r
		}
		h[i] = h[c]
		h[i].heapIdx = i
		i = c
	}
	// The states on the path above i are due in order; the state goes
	// above every one not due before it, as the descent that compared it
	// at each level stopped at the first child not due before it.
	for i > top {
		parent := (i - 1) / 2
		p := h[parent]
		if p.deadline < st.deadline {
			break
		}
		h[i], p.heapIdx = p, i
		i = parent
	}
	h[i], st.heapIdx = st, i
}
