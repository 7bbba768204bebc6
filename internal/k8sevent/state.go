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
	var e StateEncoder
	e.Encode(lr, st)
}

// StateEncoder writes States (EncodeState), keeping the text of the times
// it formatted last: a series' first occurrence rarely changes, and the
// records decided together often share their times. Its zero value is
// ready; it is not safe for concurrent use.
type StateEncoder struct {
	times [4]timeText // first and last occurrence, RFC 3339 with ns and µs
}

type timeText struct {
	ns   int64
	text string
}

// The places of StateEncoder.times.
const (
	firstNano = iota
	lastNano
	firstMicro
	lastMicro
)

// format is ns formatted in layout, remembered in place i.
func (e *StateEncoder) format(i int, ns int64, layout string) string {
	t := &e.times[i]
	if t.text == "" || t.ns != ns {
		t.ns, t.text = ns, formatUnixNano(ns, layout)
	}
	return t.text
}

// Encode writes st over lr, as EncodeState does.
func (e *StateEncoder) Encode(lr plog.LogRecord, st *State) {
	lr.SetEventName(EventName)
	attrs := lr.Attributes()
	keepStr(attrs, AttrEventName, st.Name)
	stateKeySet.Remove(attrs)
	attrs.EnsureCapacity(attrs.Len() + st.adds()) // one allocation at most, not one per growth
	e.putState(attrs, st)
}

// adds is how many keys Encode adds after removing StateKeys.
func (st *State) adds() int {
	switch {
	case st.SeriesState == "" && st.Aggregated:
		return 5 // new occurrences, count, first and last timestamp, aggregated
	case st.SeriesState == "":
		return 4
	case st.SeriesState == StateSingleton:
		return 3 // new occurrences, state, event time
	default:
		return 5 // and series count, last observed
	}
}

// keepStr puts v under k, but leaves a first copy that holds it already
// as it is (setting a value allocates).
func keepStr(attrs pcommon.Map, k, v string) {
	if old, ok := attrs.Get(k); ok {
		keepValue(old, v)
		return
	}
	attrs.PutStr(k, v)
}

// keepValue sets old to the string v unless it holds it already.
func keepValue(old pcommon.Value, v string) {
	if old.Type() != pcommon.ValueTypeStr || old.Str() != v {
		old.SetStr(v)
	}
}

// EncodeCluster writes the cluster onto a resource's attributes (the keys
// that are known).
func EncodeCluster(attrs pcommon.Map, c Cluster) {
	putStr(attrs, AttrClusterName, c.Name)
	putStr(attrs, AttrClusterUID, c.UID)
}

func putOrRemove(attrs pcommon.Map, k, v string) {
	if v == "" {
		attrs.Remove(k)
		return
	}
	attrs.PutStr(k, v)
}

func formatUnixNano(ns int64, layout string) string {
	return time.Unix(0, ns).UTC().Format(layout)
}
