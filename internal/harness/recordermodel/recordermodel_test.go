package recordermodel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

func occ(at time.Duration, pod, reason string) storm.Occurrence {
	return storm.Occurrence{Time: storm.Start.Add(at), Type: "Warning", Reason: reason, Note: "n",
		Regarding: storm.Ref{Kind: "Pod", Namespace: "ns", Name: pod}, Controller: "kubelet", Instance: "node-1"}
}

// Three occurrences of one key: a create, the series patch at the second,
// the finishing patch of the sweep; a singleton is written once.
func TestSeries(t *testing.T) {
	occs := []storm.Occurrence{occ(time.Second, "a", "BackOff"), occ(2*time.Second, "b", "Pulled"),
		occ(10*time.Second, "a", "BackOff"), occ(20*time.Second, "a", "BackOff")}
	tl := Series(occs)
	assert.Equal(t, 4, tl.Writes)
	assert.Equal(t, Truth(occs), tl.Counts())
	abs, invisible := CountError(Truth(occs), tl.Counts())
	assert.Zero(t, abs)
	assert.Zero(t, invisible)
}

// The legacy correlator patches an identical event's count at every occurrence.
func TestLegacy(t *testing.T) {
	occs := []storm.Occurrence{occ(time.Second, "a", "BackOff"), occ(10*time.Second, "a", "BackOff")}
	tl := Legacy(occs)
	assert.Equal(t, 2, tl.Writes)
	assert.Equal(t, map[Pair]int64{{"Pod/a", "BackOff"}: 2}, tl.Counts())
}
