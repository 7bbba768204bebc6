package recorder

import (
	"sync"
	"testing"
	"time"
)

// TestCallsNeverShareATime: calls from many goroutines on a clock that
// does not move get distinct times, each after the clock's, so that no two
// requests of the same occurrences are identical.
func TestCallsNeverShareATime(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := &Recorder{now: func() time.Time { return at }}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				ns := r.stamp().UnixNano()
				mu.Lock()
				seen[ns] = true
				mu.Unlock()
				if ns < at.UnixNano() {
					t.Errorf("stamp %d before the clock's %d", ns, at.UnixNano())
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != 800 {
		t.Fatalf("%d distinct times for 800 calls", len(seen))
	}
}
