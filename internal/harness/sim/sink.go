package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A log sink beside the k8sevents exporter (the ready configurations'
// debug exporter) sees every record the processor hands on, and none of
// the exporter's repairs: a record it never got is a count it never shows,
// whatever the API server holds. The sink is the world's, like a log
// store: it outlives the processes that write to it. P6 holds it to the
// API server: per object, the highest count of each series it got add up
// to what the written Events state.

// sinkLog is what every sink of the world took: per Event name (one
// series), the highest count stated and the object it is about.
type sinkLog struct {
	mu      sync.Mutex
	high    map[string]int64
	objects map[string]seriesKey
}

func newSinkLog() *sinkLog {
	return &sinkLog{high: map[string]int64{}, objects: map[string]seriesKey{}}
}

// take notes the records of ld.
func (s *sinkLog) take(ld plog.Logs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				ev, _, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{SkipTimes: true})
				if !found {
					continue
				}
				s.high[ev.Name] = max(s.high[ev.Name], ev.Occurrences())
				s.objects[ev.Name] = seriesKey{Namespace: ev.ObjectNamespace(), Kind: ev.Regarding.Kind, Name: ev.Regarding.Name, Reason: ev.Reason}
			}
		}
	}
}

// totals is, per object, the sum of its series' highest counts.
func (s *sinkLog) totals() map[seriesKey]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[seriesKey]int64{}
	for name, n := range s.high {
		out[s.objects[name]] += n
	}
	return out
}

// checkSink is P6: per object, the sink states what the API server holds.
// written is the written Events' sum per object; only worlds where some
// process has a sink are held to it. check sorts what it returns.
func (w *World) checkSink(written map[seriesKey]int64) []Violation {
	w.mu.Lock()
	has := w.hasSink
	w.mu.Unlock()
	if !has {
		return nil
	}
	sunk := w.sink.totals()
	keys := map[seriesKey]bool{}
	for k := range written {
		keys[k] = true
	}
	for k := range sunk {
		keys[k] = true
	}
	var out []Violation
	for k := range keys {
		if got, want := sunk[k], written[k]; got != want {
			out = append(out, Violation{"P6", fmt.Sprintf("%s: the log sink's highest counts add up to %d, the written Events to %d", k, got, want)})
		}
	}
	return out
}

// sinkExporter takes every batch into the world's sink log while its
// process lives, and never refuses, as the debug exporter does.
type sinkExporter struct {
	log  *sinkLog
	life *lifeline
}

func (sinkExporter) Start(context.Context, component.Host) error { return nil }
func (sinkExporter) Shutdown(context.Context) error              { return nil }
func (sinkExporter) Capabilities() consumer.Capabilities         { return consumer.Capabilities{} }

func (s sinkExporter) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	if !s.life.ok() {
		return errors.New("sink: the process is down")
	}
	s.log.take(ld)
	return nil
}

var _ exporter.Logs = sinkExporter{}
