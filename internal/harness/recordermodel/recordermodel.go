// Package recordermodel computes what client-go's event recorders would
// write for a recorded storm: the API writes and the last count of every
// Event object. The processor's write-count report and the end-to-end
// tests compare the pipeline's writes with these.
//
// It is test support: nothing in the collector's components imports it.
package recordermodel

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

// Pair is what a person looks for in kubectl get events: an object
// (kind/name) and a reason.
type Pair struct{ Object, Reason string }

// PairOf is the pair of an occurrence.
func PairOf(o *storm.Occurrence) Pair {
	return Pair{o.Regarding.Kind + "/" + o.Regarding.Name, o.Reason}
}

// Truth is the number of occurrences per pair: the exact final counts.
func Truth(occs []storm.Occurrence) map[Pair]int64 {
	out := map[Pair]int64{}
	for i := range occs {
		out[PairOf(&occs[i])]++
	}
	return out
}

// Tally is what a recorder wrote for a stream: its API writes, and the last
// count it wrote for each object, by pair.
type Tally struct {
	Writes int
	Last   map[string]int64 // object name -> last count written
	PairOf map[string]Pair  // object name -> its pair
}

// NewTally returns an empty tally.
func NewTally() *Tally { return &Tally{Last: map[string]int64{}, PairOf: map[string]Pair{}} }

// Write records one API write of the object name with its count.
func (t *Tally) Write(name string, p Pair, count int64) {
	t.Writes++
	t.Last[name] = count
	t.PairOf[name] = p
}

// Counts sums, per pair, the final counts of the objects written for it.
func (t *Tally) Counts() map[Pair]int64 {
	out := map[Pair]int64{}
	for name, c := range t.Last {
		out[t.PairOf[name]] += c
	}
	return out
}

// CountError is the total, over pairs, of how far the final counts written
// are from the true number of occurrences; and the pairs nothing was written for.
func CountError(truth, written map[Pair]int64) (abs int64, invisible int) {
	for p, n := range truth {
		w, ok := written[p]
		if !ok {
			invisible++
		}
		abs += max(n-w, w-n)
	}
	return abs, invisible
}

// Legacy runs client-go's EventCorrelator (tools/record) over the stream
// with a fake clock: every result it does not skip is a create or a patch.
func Legacy(occs []storm.Occurrence) *Tally {
	clock := clocktesting.NewFakeClock(storm.Start)
	correlator := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clock})
	out := NewTally()
	for i := range occs {
		clock.SetTime(occs[i].Time)
		ev := occs[i].Event()
		ev.Name = fmt.Sprintf("%s.%x", ev.Regarding.Name, occs[i].Time.UnixNano()+int64(i))
		ev.Count, ev.FirstTimestamp, ev.LastTimestamp = 1, occs[i].Time, occs[i].Time
		res, _ := correlator.EventCorrelate(ev.ToCoreV1())
		if !res.Skip {
			out.Write(res.Event.Name, PairOf(&occs[i]), int64(res.Event.Count))
		}
	}
	return out
}

// Series models client-go's tools/events broadcaster
// (event_broadcaster.go, v0.36) on the stream: create at the first
// occurrence of an isomorphic key, a patch with series count 2 at the
// second, nothing after (these three are what the processor's
// TestSeriesModeAgreesWithEventsBroadcaster checks against the real one);
// every 30 minutes a refresh patches every open series, every 6 minutes a
// sweep patches and forgets series idle for 6 minutes and forgets
// singletons older than 6 minutes; both sweeps run first when recording
// starts. Its clock is wall time, so the real one cannot replay a stream:
// hence a model.
func Series(occs []storm.Occurrence) *Tally {
	type entry struct {
		name            string
		p               Pair
		count           int64
		first, lastSeen time.Time
		series          bool
	}
	cache := map[string]*entry{}
	out := NewTally()
	refreshAt, finishAt := storm.Start, storm.Start
	sweep := func(until time.Time) {
		for !finishAt.After(until) || !refreshAt.After(until) {
			if !refreshAt.After(finishAt) {
				for _, e := range cache {
					if e.series {
						out.Write(e.name, e.p, e.count)
					}
				}
				refreshAt = refreshAt.Add(30 * time.Minute)
				continue
			}
			for k, e := range cache {
				switch {
				case e.series && e.lastSeen.Before(finishAt.Add(-6*time.Minute)):
					out.Write(e.name, e.p, e.count)
					delete(cache, k)
				case !e.series && e.first.Before(finishAt.Add(-6*time.Minute)):
					delete(cache, k)
				}
			}
			finishAt = finishAt.Add(6 * time.Minute)
		}
	}
	for i := range occs {
		o := &occs[i]
		sweep(o.Time)
		rel := ""
		if o.Related != nil {
			rel = fmt.Sprint(*o.Related)
		}
		key := fmt.Sprint(o.Type, "\x00", o.Action, "\x00", o.Reason, "\x00", o.Controller, "\x00", o.Instance, "\x00", o.Regarding, "\x00", rel)
		e, ok := cache[key]
		switch {
		case !ok:
			e = &entry{name: fmt.Sprintf("%s.%x", o.Regarding.Name, o.Time.UnixNano()+int64(i)), p: PairOf(o), count: 1, first: o.Time, lastSeen: o.Time}
			cache[key] = e
			out.Write(e.name, e.p, 1)
		case !e.series:
			e.series, e.count, e.lastSeen = true, 2, o.Time
			out.Write(e.name, e.p, 2)
		default:
			e.count++
			e.lastSeen = o.Time
		}
	}
	// Recording goes on after the storm: let every series finish.
	for len(cache) > 0 {
		sweep(finishAt)
	}
	return out
}
