package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// BenchmarkEngine is the engine alone (no pdata, no shell) on the record
// shapes of the processor's benchmarks, defaults, each record 10 ms after
// the one before: every occurrence an Event object of its own (a new uid
// and name, no count) on 4 crashlooping pods (duplicate-heavy), or on a
// new pod each (churn: every record makes a state and a spam bucket and
// pushes the oldest out). Read ns/op and allocs/op per record.
func BenchmarkEngine(b *testing.B) {
	for _, stream := range []struct {
		name string
		pods int // 0: a new pod per record
	}{{"uid-per-occurrence/duplicate-heavy", 4}, {"uid-per-occurrence/churn", 0}} {
		for _, legacy := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/legacy=%t", stream.name, legacy), func(b *testing.B) {
				cfg := defaults()
				cfg.Legacy = legacy
				e, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				evs := benchEvents(stream.pods)
				b.ReportAllocs()
				b.ResetTimer()
				for n := range b.N {
					ev := &evs[n%len(evs)]
					ev.Time = t0.Add(time.Duration(n) * 10 * time.Millisecond)
					e.Observe(ev, ev.Time.UnixNano())
				}
			})
		}
	}
}

// benchEvents makes 1<<16 records (more than max_keys and its filter of
// forgotten objects hold), of pods pods in turn, or each of its own pod.
func benchEvents(pods int) []k8sevent.Event {
	evs := make([]k8sevent.Event, 1<<16)
	for i := range evs {
		pod := fmt.Sprintf("pod-%d", i)
		if pods > 0 {
			pod = fmt.Sprintf("pod-%d", i%pods)
		}
		evs[i] = podEvent(pod, "BackOff", "Back-off restarting failed container app in pod "+pod)
		evs[i].Name, evs[i].UID = fmt.Sprintf("%s.%x", pod, i), fmt.Sprintf("event-uid-%d", i)
	}
	return evs
}
