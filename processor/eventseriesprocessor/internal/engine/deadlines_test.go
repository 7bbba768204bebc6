package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// swapHeap is the deadline heap as it was written before up and down
// moved a hole: swaps at every level. The order of states with equal
// deadlines depends on the heap's layout, and snapshots keep that order.
type swapHeap []*state

func (h *swapHeap) schedule(st *state, d int64) {
	switch {
	case st.heapIdx < 0:
		st.deadline, st.heapIdx = d, len(*h)
		*h = append(*h, st)
		h.up(st.heapIdx)
	case d < st.deadline:
		st.deadline = d
		h.up(st.heapIdx)
	}
}

func (h *swapHeap) reschedule(st *state, d int64) {
	if st.heapIdx < 0 {
		h.schedule(st, d)
		return
	}
	st.deadline = d
	if !h.up(st.heapIdx) {
		h.down(st.heapIdx)
	}
}

func (h *swapHeap) remove(st *state) {
	i := st.heapIdx
	if i < 0 {
		return
	}
	last := len(*h) - 1
	h.swap(i, last)
	*h = (*h)[:last]
	st.heapIdx = -1
	if i < last && !h.up(i) {
		h.down(i)
	}
}

func (h swapHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}

func (h swapHeap) up(i int) (moved bool) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[i].deadline >= h[parent].deadline {
			break
		}
		h.swap(i, parent)
		i, moved = parent, true
	}
	return moved
}

func (h swapHeap) down(i int) {
	for {
		small := i
		if l := 2*i + 1; l < len(h) && h[l].deadline < h[small].deadline {
			small = l
		}
		if r := 2*i + 2; r < len(h) && h[r].deadline < h[small].deadline {
			small = r
		}
		if small == i {
			return
		}
		h.swap(i, small)
		i = small
	}
}

// The deadline heap keeps the layout the swapping heap had, so ties come
// due in the same order: random schedules, reschedules (earlier and
// later), removals and pops of the earliest, over few distinct deadlines
// (many ties), leave both heaps holding the same states in the same
// places, each state's index its place.
func TestDeadlinesKeepTheSwappingHeapsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for run := range 100 {
		n := 1 + rng.IntN(300)
		got, want := make([]*state, n), make([]*state, n)
		for i := range n {
			got[i], want[i] = &state{heapIdx: -1, count: int64(i)}, &state{heapIdx: -1, count: int64(i)} // count: which state
		}
		var h deadlines
		var ref swapHeap
		for step := range 1000 {
			i, d := rng.IntN(n), rng.Int64N(20)
			switch rng.IntN(4) {
			case 0:
				h.schedule(got[i], d)
				ref.schedule(want[i], d)
			case 1:
				h.reschedule(got[i], d)
				ref.reschedule(want[i], d)
			case 2:
				h.remove(got[i])
				ref.remove(want[i])
			default:
				if st := h.peek(); st != nil {
					h.remove(st)
					ref.remove(ref[0])
				}
			}
			require.Len(t, h, len(ref), "run %d step %d", run, step)
			for pos := range h {
				if h[pos].count != ref[pos].count || h[pos].heapIdx != pos {
					t.Fatalf("run %d step %d: place %d holds state %d (index %d), the swapping heap state %d",
						run, step, pos, h[pos].count, h[pos].heapIdx, ref[pos].count)
				}
			}
		}
	}
}
