package k8sevent

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// State is what the eventseries processor decided about the one Event
// object a record writes: its name, the occurrences it shows and when.
type State struct {
	Name string
	// SeriesState is singleton, started, ongoing or finished; "" writes the
	// legacy fields (count, first and last timestamp) instead.
	SeriesState string
	Count       int64
	First, Last int64 // unix ns of the first and latest occurrence
	Aggregated  bool
	// NewOccurrences is what Count grew by since the object's previous
	// record (0 for a record that only repeats it): written in every mode.
	NewOccurrences int64
}

// StateKeys are the keys a State writes, with the source object's uid and
// the start time: on an emitted record they describe the object it writes,
// never the input's.
var StateKeys = []string{
	AttrEventUID, AttrSeriesState, AttrAggregated, AttrCount,
	AttrFirstTimestamp, AttrLastTimestamp, AttrStartTime,
	AttrSeriesCount, AttrSeriesLastObserved, AttrEventTime, AttrNewOccurrences,
}

// OwnedKeys describe the one Event object an emitted record writes: they
// must not reach it from a resource shared with other records (the codec
// reads the resource when the record lacks a key).
var OwnedKeys = append([]string{AttrEventName, AttrEventNamespace}, StateKeys...)

// Sets of StateKeys and OwnedKeys.
var (
	stateKeySet = NewKeySet(StateKeys...)
	OwnedKeySet = NewKeySet(OwnedKeys...)
)

// EncodeState writes st over lr: its EventName, every copy of StateKeys
// removed, then the fields of st's mode only.
func EncodeState(lr plog.LogRecord, st *State) {
	lr.SetEventName(EventName)
	attrs := lr.Attributes()
	keepStr(attrs, AttrEventName, st.Name)
	stateKeySet.Remove(attrs)
	attrs.EnsureCapacity(attrs.Len() + st.keys()) // grown once, not per key
	putState(attrs, st)
}

// keys is how many keys putState appends for st.
func (st *State) keys() int {
	switch {
	case st.SeriesState == "" && st.Aggregated:
		return 5 // new occurrences, count, first and last timestamp, aggregated
	case st.SeriesState == "":
		return 4
	case st.SeriesState == StateSingleton:
		return 3 // new occurrences, state, event time
	default:
		return 5 // and series count, last observed time
	}
}

// putState appends st's keys (the fields of its mode only) to attrs, which
// holds none of StateKeys.
func putState(attrs pcommon.Map, st *State) {
	first, last := time.Unix(0, st.First).UTC(), time.Unix(0, st.Last).UTC()
	attrs.PutInt(AttrNewOccurrences, st.NewOccurrences)
	if st.SeriesState == "" {
		attrs.PutInt(AttrCount, st.Count)
		attrs.PutStr(AttrFirstTimestamp, first.Format(time.RFC3339Nano))
		attrs.PutStr(AttrLastTimestamp, last.Format(time.RFC3339Nano))
		if st.Aggregated {
			attrs.PutBool(AttrAggregated, true)
		}
		return
	}
	attrs.PutStr(AttrSeriesState, st.SeriesState)
	attrs.PutStr(AttrEventTime, first.Format(MicroTimeFormat))
	if st.SeriesState != StateSingleton {
		attrs.PutInt(AttrSeriesCount, st.Count)
		attrs.PutStr(AttrSeriesLastObserved, last.Format(MicroTimeFormat))
	}
}

// EncodeCluster writes the cluster onto a resource's attributes (the keys
// that are known).
func EncodeCluster(attrs pcommon.Map, c Cluster) {
	putStr(attrs, AttrClusterName, c.Name)
	putStr(attrs, AttrClusterUID, c.UID)
}
