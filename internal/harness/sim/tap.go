package sim

import (
	"context"
	"sort"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// tap sits in front of an eventseries processor and notes, for each batch
// it took (or may have taken), when each record's key arrived: a series can end only where its
// records reached the processor further apart than series.finish_after,
// which is what the one-object-per-series property is held to.
type tap struct {
	next        consumer.Logs
	w           *World
	life        *lifeline // the incarnation's
	finishAfter time.Duration
}

func (t tap) Capabilities() consumer.Capabilities { return t.next.Capabilities() }

func (t tap) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	var keys []seriesKey
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if ev, _, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{SkipTimes: true}); found {
					keys = append(keys, seriesKey{Namespace: ev.ObjectNamespace(), Kind: ev.Regarding.Kind, Name: ev.Regarding.Name, Reason: ev.Reason,
						Controller: recordController(lr, &ev)})
				}
			}
		}
	}
	err := t.next.ConsumeLogs(ctx, ld) // the processor owns ld from here
	// A batch taken, or handed to a processor that crashed meanwhile (it may
	// have logged the batch: the log's replay counts it). Noted when the call
	// returns: a call may wait long to be admitted, and the batch is counted
	// at its end.
	if err == nil || !t.life.ok() {
		t.w.ledger.arrived(keys, arrival{at: time.Now(), finishAfter: t.finishAfter, sure: err == nil})
	}
	return err
}

// seriesBound is how many series the records of one key can have made: one,
// and one more at each gap between two arrivals of finish_after or more.
// An arrival at a processor that crashed may or may not have been counted,
// and either can make more series (present, it can start one after a gap;
// absent, it leaves a gap open), so the bound is the most over every
// choice of them: most[i] is the most series the arrivals up to i made
// when i was counted, every sure arrival before i counted too.
func seriesBound(arrivals []arrival) int {
	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].at.Before(arrivals[j].at) })
	most := make([]int, len(arrivals))
	lastSure := -1 // the latest sure arrival so far: none before it may be left out
	for i, a := range arrivals {
		if lastSure < 0 {
			most[i] = 1 // the first arrival counted
		}
		for j := max(lastSure, 0); j < i; j++ {
			n := most[j]
			if a.at.Sub(arrivals[j].at) >= a.finishAfter { // a series ends once idle for finish_after
				n++
			}
			most[i] = max(most[i], n)
		}
		if a.sure {
			lastSure = i
		}
	}
	bound := 0
	for i := max(lastSure, 0); i < len(arrivals); i++ {
		bound = max(bound, most[i])
	}
	return bound
}

// arrival is a record of a key taken by a processor.
type arrival struct {
	at          time.Time
	finishAfter time.Duration
	sure        bool // taken; else handed to a processor that crashed meanwhile
}
