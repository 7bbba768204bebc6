package main

import (
	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

// recorderCost is what one emitter wrote for a scenario: its API writes,
// and how far the final counts of its Events are from the occurrences.
type recorderCost struct {
	Writes int64
	// CountErr is the occurrences lost or misstated: the sum, over
	// (object, reason) pairs, of |final count written - occurrences|.
	CountErr int64
	// Unseen is the pairs that have no Event at all.
	Unseen int
}

// baseline is, for one scenario's occurrences, the exact counts and what
// client-go's two recorders would have written for them.
type baseline struct {
	Truth map[recordermodel.Pair]int64
	// Record is tools/record, the legacy recorder: client-go's own
	// EventCorrelator (aggregation, then the spam filter's token bucket per
	// source and object, then compression into a count patch) run
	// in-process on a fake clock set to each occurrence's storm time.
	Record recorderCost
	// Events is tools/events, the events.k8s.io series recorder:
	// recordermodel's model of its broadcaster, whose clock is wall time
	// (it cannot be driven by a replayed storm's time).
	Events recorderCost
}

// baselineOf replays the occurrences, in storm time and at their own
// pace, through the two recorders. The pipeline replays them at -speed with
// its timers divided by the same factor, so both see the same storm.
func baselineOf(occs []storm.Occurrence) baseline {
	truth := recordermodel.Truth(occs)
	return baseline{
		Truth:  truth,
		Record: costOf(truth, recordermodel.Legacy(occs)),
		Events: costOf(truth, recordermodel.Series(occs)),
	}
}

func costOf(truth map[recordermodel.Pair]int64, t *recordermodel.Tally) recorderCost {
	countErr, unseen := recordermodel.CountError(truth, t.Counts())
	return recorderCost{Writes: int64(t.Writes), CountErr: countErr, Unseen: unseen}
}

// baselines computes the baseline of every scenario.
func baselines(scs []scenario) map[string]baseline {
	out := make(map[string]baseline, len(scs))
	for _, sc := range scs {
		out[sc.Name] = baselineOf(sc.Occs)
	}
	return out
}

// sum is the number of occurrences the truth counts.
func (b baseline) sum() int64 {
	var n int64
	for _, c := range b.Truth {
		n += c
	}
	return n
}

// pipelineCost is the pipeline's count error for a scenario, from the
// Events it wrote.
func pipelineCost(b baseline, events []outputEvent) (countErr int64, unseen int) {
	written := map[recordermodel.Pair]int64{}
	for i := range events {
		written[events[i].Pair] += events[i].Count
	}
	countErr, unseen = recordermodel.CountError(b.Truth, written)
	for p, c := range written {
		if _, ok := b.Truth[p]; !ok {
			countErr += c // counted for a pair the scenario never had
		}
	}
	return countErr, unseen
}
