package e2e

import (
	"flag"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// parallelSlots is how many of the package's parallel tests run at once:
// most of them wait on outages, paced storms and liveness bounds, not on
// a core.
const parallelSlots = 5

// startFirst names the longest tests, longest first. go test resumes
// parallel tests in no fixed order once the serial ones are done, and a
// long test that happens to start last becomes the package's tail; the
// slots go to these first, then to the others in the order they asked.
// A test missing here only starts later than it could.
var startFirst = []string{
	"TestScaleOut", "TestHub", "TestFaultDestinationDownMidStorm", "TestFaultThrottledByEventRateLimit",
	"TestFaultCollectorKilledWithRetriesPending", "TestExactDestinationStartingAnswers403", "TestRestart",
	"TestHandOverTier2Scale", "TestRecorderStorm", "TestFaultDestinationDownAsStormEnds", "TestIngestStreams",
}

// parallel is t.Parallel for this package's top-level tests: it returns
// once the test holds one of the parallelSlots, and the slot is released
// after the test's other cleanups (stopped collectors and API servers).
// Go's own limit (-parallel) must not be lower than the number of tests
// for the order to hold (Makefile); a lower one only makes it partial.
func parallel(t *testing.T) {
	t.Helper()
	slots.register()
	t.Parallel()
	release := slots.acquire(t.Name())
	t.Cleanup(release)
}

var slots = &slotGate{free: parallelSlots}

// slotGate hands out slots, startFirst's tests first. The parallel tests
// all register while go test runs the serial ones, before any of them
// resumes, so the gate hands out nothing until every registered test
// that go test lets resume has asked: from then on the order is by rank.
type slotGate struct {
	mu         sync.Mutex
	free       int
	registered int
	asked      int
	started    bool // the first slots were handed out
	waiting    []*slotWaiter
	limit      int // go test's -parallel; 0: read from its flag
}

type slotWaiter struct {
	rank  int // position in startFirst; len(startFirst) when absent
	order int // when it asked, among equal ranks
	ready chan struct{}
}

func (g *slotGate) register() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.registered++
}

// acquire waits for a slot and returns its release.
func (g *slotGate) acquire(name string) (release func()) {
	rank := slices.Index(startFirst, name)
	if rank < 0 {
		rank = len(startFirst)
	}
	w := &slotWaiter{rank: rank, ready: make(chan struct{})}
	g.mu.Lock()
	g.asked++
	w.order = g.asked
	g.waiting = append(g.waiting, w)
	g.handOut()
	g.mu.Unlock()
	<-w.ready
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.free++
		g.handOut()
	}
}

// handOut gives free slots to the best-ranked waiters. Called with mu held.
func (g *slotGate) handOut() {
	limit := g.limit
	if limit == 0 {
		limit = goParallel()
	}
	if !g.started && g.asked < min(g.registered, limit) {
		return
	}
	g.started = true
	slices.SortFunc(g.waiting, func(a, b *slotWaiter) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return a.order - b.order
	})
	for g.free > 0 && len(g.waiting) > 0 {
		close(g.waiting[0].ready)
		g.waiting = g.waiting[1:]
		g.free--
	}
}

// goParallel is go test's -parallel: how many parallel tests it lets run
// (and so ask for a slot) at once.
func goParallel() int {
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// TestSlotGateHandsOutLongestFirst: with every registered test asking, the
// slots go by rank in startFirst, whatever order the tests asked in, and
// nothing is handed out before the last registered test asks.
func TestSlotGateHandsOutLongestFirst(t *testing.T) {
	g := &slotGate{free: 1, limit: 64}
	names := []string{"TestUnranked", startFirst[1], startFirst[0]}
	granted := make(chan string, len(names))
	var wg sync.WaitGroup
	for range names {
		g.register()
	}
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release := g.acquire(name)
			granted <- name
			release()
		}()
		for asked := 0; asked <= i; { // the next one asks after this one
			g.mu.Lock()
			asked = g.asked
			g.mu.Unlock()
		}
		if i < len(names)-1 {
			select {
			case name := <-granted:
				t.Fatalf("%s got a slot before every registered test asked", name)
			default:
			}
		}
	}
	wg.Wait()
	close(granted)
	var order []string
	for name := range granted {
		order = append(order, name)
	}
	if want := []string{startFirst[0], startFirst[1], "TestUnranked"}; !slices.Equal(order, want) {
		t.Errorf("slots went to %v, want %v", order, want)
	}
}
