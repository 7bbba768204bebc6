package engine

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// BenchmarkEngine is the engine alone (no pdata, no shell) on the record
// shapes of the processor's benchmarks, defaults, each record 10 ms after
// the one before: every occurrence an Event object of its own (a new uid
// and name, no count) on 4 crashlooping pods (duplicate-heavy), or on a
// new pod each (churn: every record makes a state and a spam bucket and
// pushes the oldest out); or one Event object per pod whose cumulative
// count grows by one per record (shared-uid: a watched core/v1 Event being
// patched). Read ns/op and allocs/op per record; cpu-ns/op is the
// process's CPU time per record, steadier than ns/op on a machine shared
// with other work (it leaves out the time the process waited for a core).
func BenchmarkEngine(b *testing.B) {
	for _, stream := range []struct {
		name      string
		pods      int  // 0: a new pod per record
		sharedUID bool // one Event object per pod, its count growing
	}{
		{"uid-per-occurrence/duplicate-heavy", 4, false},
		{"shared-uid/duplicate-heavy", 4, true},
		{"uid-per-occurrence/churn", 0, false},
	} {
		for _, legacy := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/legacy=%t", stream.name, legacy), func(b *testing.B) {
				cfg := defaults()
				cfg.Legacy = legacy
				e, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				evs := benchEvents(stream.pods, stream.sharedUID)
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for n := range b.N {
					ev := &evs[n%len(evs)]
					ev.Time = t0.Add(time.Duration(n) * 10 * time.Millisecond)
					if stream.sharedUID {
						ev.Count = int64(n/stream.pods + 1) // len(evs) is a multiple of pods
					}
					e.Observe(ev, ev.Time.UnixNano())
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the CPU time the process used so far, user and system, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchEvents makes 1<<16 records (more than max_keys and its filter of
// forgotten objects hold), of pods pods in turn, or each of its own pod:
// each its own Event object, or (sharedUID) one per pod.
func benchEvents(pods int, sharedUID bool) []k8sevent.Event {
	evs := make([]k8sevent.Event, 1<<16)
	for i := range evs {
		pod := fmt.Sprintf("pod-%d", i)
		if pods > 0 {
			pod = fmt.Sprintf("pod-%d", i%pods)
		}
		evs[i] = podEvent(pod, "BackOff", "Back-off restarting failed container app in pod "+pod)
		evs[i].Name, evs[i].UID = fmt.Sprintf("%s.%x", pod, i), fmt.Sprintf("event-uid-%d", i)
		if sharedUID {
			evs[i].Name, evs[i].UID = pod+".1870bd0c5e2a4f31", "event-uid-"+pod
		}
	}
	return evs
}
