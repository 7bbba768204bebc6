package eventseriesprocessor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// logsSink is the next consumer of a test processor.
type logsSink interface {
	consumer.Logs
	base() *consumertest.LogsSink
}

// errQueueFull is what an exporter's full queue answers when it does not block.
var errQueueFull = errors.New("sending queue is full")

// faultSink is a next consumer that refuses or blocks on demand, as an
// exporter's queue does during an outage. Its zero value takes everything.
type faultSink struct {
	consumertest.LogsSink
	mu      sync.Mutex
	refuse  int                 // refuse the next calls: this many, or every one while negative
	plan    func(call int) bool // when set, also refuse the calls (numbered from 1) it names
	err     error               // what a refusal returns; errQueueFull when nil
	block   chan struct{}       // when set, calls wait until it is closed, or their ctx is done
	entered chan struct{}       // a call started to wait on block
	calls   int                 // calls so far
	refused int                 // calls refused so far
}

func (s *faultSink) base() *consumertest.LogsSink { return &s.LogsSink }

func (s *faultSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	s.mu.Lock()
	s.calls++
	block, entered := s.block, s.entered
	s.mu.Unlock()
	if block != nil {
		if entered != nil {
			select {
			case entered <- struct{}{}:
			default:
			}
		}
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err() // what the blocking exporter queue answers a caller that gave up
		}
	}
	s.mu.Lock()
	if s.refuse != 0 || (s.plan != nil && s.plan(s.calls)) {
		if s.refuse > 0 {
			s.refuse--
		}
		s.refused++
		err := s.err
		s.mu.Unlock()
		if err == nil {
			err = errQueueFull
		}
		return err
	}
	s.mu.Unlock()
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

// setRefuse makes the next n calls fail (n < 0: every call until set again).
func (s *faultSink) setRefuse(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse, s.err = n, err
}

// blockCalls makes calls wait until the returned release is called.
func (s *faultSink) blockCalls() (entered <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	block, in := make(chan struct{}), make(chan struct{}, 1)
	s.block, s.entered = block, in
	var once sync.Once
	return in, func() {
		once.Do(func() {
			s.mu.Lock()
			s.block, s.entered = nil, nil
			s.mu.Unlock()
			close(block)
		})
	}
}

func (s *faultSink) refusedCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// settle waits until the records decided so far were handed to the next
// consumer, taken or refused: ConsumeLogs answers once its batch is
// counted, and the processor's goroutine hands the records on.
func settle(t testing.TB, p *eventSeriesProcessor) {
	t.Helper()
	for {
		p.mu.Lock()
		done := p.pending.records == 0 || p.refusal != nil
		attempt := p.attempted
		p.mu.Unlock()
		if done {
			return
		}
		select {
		case <-attempt:
		case <-time.After(30 * time.Second): // generous: an attempt follows each batch at once
			t.Fatal("decided records were not handed on")
		}
	}
}

// delivered is what the next consumer took, per Event object in order.
type delivered struct {
	counts map[string][]int64  // object name → counts written, in order
	names  map[string][]string // series (regarding object/reason) → object names, in order of first use
	series map[string]string   // object name → its series
	states map[string][]string // object name → series states, in order
	added  map[string]int64    // object name → sum of k8s.event.occurrences.new
}

// collect reads every Event record the sinks took, in order (sinks in order).
func collect(t testing.TB, sinks ...interface{ AllLogs() []plog.Logs }) delivered {
	d := delivered{counts: map[string][]int64{}, names: map[string][]string{}, series: map[string]string{},
		states: map[string][]string{}, added: map[string]int64{}}
	for _, sink := range sinks {
		for _, ld := range sink.AllLogs() {
			for _, r := range flatten(ld) {
				ev := r.event(t)
				key := ev.Regarding.Kind + "/" + ev.Regarding.Name + "/" + ev.Reason
				if _, ok := d.series[ev.Name]; !ok {
					d.series[ev.Name] = key
					d.names[key] = append(d.names[key], ev.Name)
				}
				d.counts[ev.Name] = append(d.counts[ev.Name], countOf(&ev))
				d.states[ev.Name] = append(d.states[ev.Name], ev.SeriesState)
				d.added[ev.Name] += ev.NewOccurrences
			}
		}
	}
	return d
}

// countOf is the count a record writes: the legacy count, else the series
// count (a singleton is 1).
func countOf(ev *k8sevent.Event) int64 {
	if ev.Count > 0 {
		return ev.Count
	}
	return max(ev.SeriesCount, 1)
}

// requireExact checks the promise on what was delivered: the last counts
// of the objects add up to the occurrences, a count never goes down, each
// series is one object, and the new occurrences the records state add up
// to each object's last count (a record the next consumer refused and took
// later is summed once).
func (d delivered) requireExact(t testing.TB, occurrences int64) {
	t.Helper()
	var sum int64
	for name, counts := range d.counts {
		for i := 1; i < len(counts); i++ {
			require.GreaterOrEqual(t, counts[i], counts[i-1], "the count of %s goes down: %v", name, counts)
		}
		sum += counts[len(counts)-1]
		require.Equal(t, counts[len(counts)-1], d.added[name], "the new occurrences of %s add up to its count", name)
	}
	require.Equal(t, occurrences, sum, "final counts add up to the occurrences: %v", d.counts)
	for key, names := range d.names {
		require.Len(t, names, 1, "series %s is one object: %v", key, names)
	}
}

// name is the one Event object name the sink took records for.
func (s *faultSink) name(t testing.TB) string {
	d := collect(t, s)
	require.Len(t, d.counts, 1, "one object: %v", d.counts)
	for name := range d.counts {
		return name
	}
	return ""
}
