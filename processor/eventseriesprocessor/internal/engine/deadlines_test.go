package engine

import (
	"container/heap"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// refHeap is a heap of states by container/heap, whose up and down swap
// at every level, as the deadline heap's did before they moved a hole. The
// order of states with equal deadlines depends on the heap's layout, and
// snapshots keep that order.
type refHeap []*state

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h refHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *refHeap) Push(x any) { x.(*state).heapIdx = len(*h); *h = append(*h, x.(*state)) }
func (h *refHeap) Pop() any {
	st := (*h)[len(*h)-1]
	*h, st.heapIdx = (*h)[:len(*h)-1], -1
	return st
}

// set is deadlines.schedule (earlier: only ever earlier) and reschedule.
func (h *refHeap) set(st *state, d int64, earlier bool) {
	switch {
	case st.heapIdx < 0:
		st.deadline = d
		heap.Push(h, st)
	case !earlier || d < st.deadline:
		st.deadline = d
		heap.Fix(h, st.heapIdx)
	}
}

// The deadline heap keeps container/heap's layout (the swapping heap it
// had before passes this test too), so ties come due in the same order:
// random schedules, reschedules (earlier and later), removals and pops of
// the earliest, over few distinct deadlines (many ties), leave both heaps
// holding the same states in the same places, each state's index its
// place.
func TestDeadlinesKeepContainerHeapsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for run := range 100 {
		n := 1 + rng.IntN(300)
		got, want := make([]*state, n), make([]*state, n)
		for i := range n {
			got[i], want[i] = &state{heapIdx: -1, count: int64(i)}, &state{heapIdx: -1, count: int64(i)} // count: which state
		}
		var h deadlines
		var ref refHeap
		for step := range 1000 {
			i, d := rng.IntN(n), rng.Int64N(20)
			switch rng.IntN(4) {
			case 0:
				h.schedule(got[i], d)
				ref.set(want[i], d, true)
			case 1:
				h.reschedule(got[i], d)
				ref.set(want[i], d, false)
			case 2:
				h.remove(got[i])
				if want[i].heapIdx >= 0 {
					heap.Remove(&ref, want[i].heapIdx)
				}
			default:
				if st := h.peek(); st != nil {
					h.remove(st)
					heap.Pop(&ref)
				}
			}
			require.Len(t, h, len(ref), "run %d step %d", run, step)
			for pos := range h {
				if h[pos].count != ref[pos].count || h[pos].heapIdx != pos {
					t.Fatalf("run %d step %d: place %d holds state %d (index %d), container/heap state %d",
						run, step, pos, h[pos].count, h[pos].heapIdx, ref[pos].count)
				}
			}
		}
	}
}
