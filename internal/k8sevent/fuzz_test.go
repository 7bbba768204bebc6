package k8sevent_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/fuzzbytes"
	"github.com/k8sevents/otel-k8sevents/internal/harness/k8sobjects"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// contractKeys are the keys the codec reads; the fuzz input picks among
// them, junkKeys, and raw strings.
var contractKeys = k8sevent.ContractKeys[:]

var junkKeys = []string{"", "k8s.pod.name", "k8s.event.reason ", "K8S.EVENT.REASON", "k8s.event", "log.iostream"}

var severityTexts = []string{"", k8sevent.TypeNormal, k8sevent.TypeWarning, "warning", "Error", "INFO", "nOrMaL"}

// fuzzReader reads the fuzz input; the methods below build from it.
type fuzzReader struct{ *fuzzbytes.Reader }

// str is a raw string of up to 255 bytes, possibly invalid UTF-8.
func (r *fuzzReader) str() string { return string(r.Bytes(int(r.Byte()))) }

// timeString is a time somewhere in years 0..~10000 in one of the layouts
// the contract uses, at second, microsecond or nanosecond precision, in a
// random fixed zone.
func (r *fuzzReader) timeString() string {
	const year = 365 * 24 * 3600
	sec := int64(r.U64()%(10001*year)) - 1970*year
	nsec := int64(r.U32() % 1e9)
	switch r.Byte() % 3 {
	case 0:
		nsec = 0
	case 1:
		nsec -= nsec % 1000
	}
	offMin := int(r.U16())%(2*24*60-1) - (24*60 - 1)
	zone := "UTC"
	switch r.Byte() % 4 {
	case 0:
		offMin = 0
	case 1:
		zone = "" // String() then writes a numeric zone, e.g. "+0330"
	case 2:
		zone = "XYZ"
	}
	t := time.Unix(sec, nsec).In(time.FixedZone(zone, offMin*60))
	switch r.Byte() % 4 {
	case 0:
		return t.Format(time.RFC3339Nano)
	case 1:
		return t.Format(k8sevent.MicroTimeFormat)
	case 2:
		return t.String()
	default:
		return t.Format(time.RFC3339)
	}
}

// putValue sets v to a value of a type the input picks.
func (r *fuzzReader) putValue(v pcommon.Value) {
	switch r.Byte() % 12 {
	case 0:
		v.SetStr(r.str())
	case 1, 2:
		v.SetStr(r.timeString())
	case 3:
		v.SetInt(int64(r.U64()))
	case 4:
		v.SetInt(int64(r.Byte()) - 100)
	case 5:
		v.SetDouble(math.Float64frombits(r.U64()))
	case 6:
		v.SetBool(r.Byte()%2 == 1)
	case 7:
		v.SetEmptyBytes().FromRaw(r.Bytes(int(r.Byte() % 32)))
	case 8:
		m := v.SetEmptyMap()
		m.PutStr(r.str(), r.str())
		m.PutInt("n", int64(r.Byte()))
	case 9:
		s := v.SetEmptySlice()
		s.AppendEmpty().SetStr(r.str())
		s.AppendEmpty().SetDouble(float64(r.Byte()))
	case 10:
		v.SetStr(strconv.Itoa(int(r.U16()) - 1000))
	default:
		// leave empty
	}
}

func (r *fuzzReader) putAttrs(m pcommon.Map, n int) {
	for range n {
		var key string
		switch k := int(r.Byte()); {
		case k < len(contractKeys)*6: // mostly contract keys
			key = contractKeys[k%len(contractKeys)]
		case k < len(contractKeys)*6+len(junkKeys):
			key = junkKeys[k-len(contractKeys)*6]
		default:
			key = r.str()
		}
		r.putValue(m.PutEmpty(key))
	}
}

func (r *fuzzReader) setBody(v pcommon.Value) {
	b := r.Byte()
	if b >= 0xf0 {
		r.setObjectBody(v)
		return
	}
	switch b % 8 {
	case 0:
		// empty body
	case 1, 2:
		v.SetStr(r.str())
	case 3:
		// Huge: up to ~320 KB of a repeated short piece (default multi-byte).
		piece := r.str()
		if piece == "" {
			piece = "a€😀"
		}
		n := int(r.U16()) * 5
		v.SetStr(strings.Repeat(piece, n/len(piece)+1)[:n])
	case 4:
		m := v.SetEmptyMap()
		m.PutStr("msg", r.str())
	case 5:
		v.SetInt(int64(r.U64()))
	case 6:
		v.SetEmptyBytes().FromRaw(r.Bytes(int(r.Byte())))
	default:
		v.SetEmptySlice().AppendEmpty().SetStr(r.str())
	}
}

// objectBodies are bodies of contrib's k8sobjects receiver (watch and pull
// mode, both API groups, an event that is no occurrence, another kind),
// which setObjectBody starts from.
var objectBodies = func() []map[string]any {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "prod", UID: "pod-uid-1"}}
	var out []map[string]any
	for _, build := range []func() (plog.Logs, error){
		func() (plog.Logs, error) { return k8sobjects.Watch(watch.Added, fullEventsV1()) },
		func() (plog.Logs, error) { return k8sobjects.Watch(watch.Modified, fullCoreV1()) },
		func() (plog.Logs, error) { return k8sobjects.Pull(fullEventsV1()) },
		func() (plog.Logs, error) { return k8sobjects.Pull(fullCoreV1()) },
		func() (plog.Logs, error) { return k8sobjects.Watch(watch.Deleted, fullEventsV1()) },
		func() (plog.Logs, error) { return k8sobjects.Watch(watch.Added, pod) },
	} {
		ld, err := build()
		if err != nil {
			panic(err)
		}
		out = append(out, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Map().AsRaw())
	}
	return out
}()

// objectPaths are the fields the decoder reads in an Event object (of
// either API group) and those that say what the body is.
var objectPaths = [][]string{
	{"apiVersion"}, {"kind"}, {"metadata"}, {"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"},
	{"metadata", "creationTimestamp"}, {"reason"}, {"action"}, {"type"}, {"note"}, {"message"},
	{"reportingController"}, {"reportingComponent"}, {"reportingInstance"},
	{"regarding"}, {"regarding", "kind"}, {"regarding", "name"}, {"regarding", "namespace"}, {"regarding", "uid"},
	{"involvedObject"}, {"involvedObject", "kind"}, {"involvedObject", "name"}, {"involvedObject", "namespace"},
	{"related"}, {"related", "kind"}, {"related", "apiVersion"},
	{"source"}, {"source", "host"}, {"deprecatedSource"}, {"deprecatedSource", "component"},
	{"eventTime"}, {"firstTimestamp"}, {"lastTimestamp"}, {"deprecatedFirstTimestamp"}, {"deprecatedLastTimestamp"},
	{"count"}, {"deprecatedCount"}, {"series"}, {"series", "count"}, {"series", "lastObservedTime"},
}

// setObjectBody sets v to one of objectBodies with a few of its fields (in
// the object itself, or of the watch event around it) set to a value of a
// type the input picks, or removed.
func (r *fuzzReader) setObjectBody(v pcommon.Value) {
	m := v.SetEmptyMap()
	_ = m.FromRaw(objectBodies[int(r.Byte())%len(objectBodies)])
	obj := m
	if o, ok := m.Get("object"); ok && o.Type() == pcommon.ValueTypeMap {
		obj = o.Map()
	}
	for range r.Byte() % 8 {
		at := obj
		if b := r.Byte(); b >= 0xf0 { // the watch event's own fields
			at, b = m, b%2
			r.putField(at, []string{[]string{"type", "object"}[b]})
			continue
		}
		r.putField(at, objectPaths[int(r.Byte())%len(objectPaths)])
	}
}

// putField sets the field at path in m (its maps made when missing, or
// not a map) to a value the input picks, or removes it.
func (r *fuzzReader) putField(m pcommon.Map, path []string) {
	for _, k := range path[:len(path)-1] {
		if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeMap {
			m = v.Map()
		} else {
			m = m.PutEmptyMap(k)
		}
	}
	last := path[len(path)-1]
	if r.Byte()%4 == 0 {
		m.Remove(last)
		return
	}
	r.putValue(m.PutEmpty(last))
}

// buildRecord turns fuzz input into a resource and a log record.
func buildRecord(data []byte) (pcommon.Resource, plog.LogRecord) {
	r := &fuzzReader{fuzzbytes.New(data)}
	res := pcommon.NewResource()
	lr := plog.NewLogRecord()

	flags := r.Byte()
	switch flags % 4 {
	case 1: // a plausible time
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(r.U32()) * time.Millisecond)))
	case 2: // any 64-bit value
		lr.SetTimestamp(pcommon.Timestamp(r.U64()))
	}
	lr.SetSeverityText(severityTexts[int(r.Byte())%len(severityTexts)])
	if flags&4 != 0 {
		lr.SetSeverityText(r.str())
	}
	lr.SetSeverityNumber(plog.SeverityNumber(r.Byte() % 26))
	r.setBody(lr.Body())
	r.putAttrs(res.Attributes(), int(r.Byte()%8))
	r.putAttrs(lr.Attributes(), int(r.Byte()%32))
	return res, lr
}

var fuzzNow = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 9, 1, 5, 'h', 'e', 'l', 'l', 'o', 0, 3, 2, 0, 3, 'B', 'a', 'd', 5, 0, 3, 'P', 'o', 'd', 6, 0, 3, 'w', 'e', 'b'})
	f.Add([]byte{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 13, 3, 0, 0xff, 0xff, 0, 4, 2, 1, 'x', 5, 6, 1, 'P', 6, 0, 1, 'p'})
	// contrib's k8sobjects receiver: each body as it writes it, then with
	// a field set to another type, or the watch type or object replaced.
	for i := range objectBodies {
		f.Add([]byte{0, 0, 0, 0xf0, byte(i), 0})
	}
	f.Add([]byte{0, 0, 0, 0xf0, 0, 2, 0, 31, 1, 4, 7, 0, 37, 1, 0, 4, 'm', 'a', 'n', 'y'})    // eventTime an int, count a word
	f.Add([]byte{0, 0, 0, 0xf0, 1, 1, 0, 20, 1, 0, 1, 'x'})                                   // core/v1 involvedObject a string
	f.Add([]byte{0, 0, 0, 0xf0, 4, 1, 0xf0, 1, 0, 8, 'M', 'O', 'D', 'I', 'F', 'I', 'E', 'D'}) // DELETED made MODIFIED

	f.Fuzz(func(t *testing.T, data []byte) {
		res, lr := buildRecord(data)

		// Never panics, with either option.
		_, _, _ = k8sevent.Decode(res, lr, k8sevent.DecodeOptions{SkipTimes: true})
		ev, _, found := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
		if !found {
			return
		}
		noteWasValid := utf8.ValidString(ev.Note)

		_, fatal := k8sevent.Sanitize(&ev, fuzzNow)
		if fatal != 0 {
			return
		}
		require.LessOrEqual(t, len(ev.Note), k8sevent.MaxNoteBytes)
		require.Contains(t, []string{k8sevent.TypeNormal, k8sevent.TypeWarning, k8sevent.TypeError, k8sevent.TypeCritical}, ev.Type)
		require.LessOrEqual(t, len(ev.Reason), k8sevent.MaxFieldBytes)
		require.LessOrEqual(t, len(ev.Action), k8sevent.MaxFieldBytes)
		require.LessOrEqual(t, len(ev.ReportingInstance), k8sevent.MaxFieldBytes)
		require.NotEmpty(t, ev.Reason)
		require.False(t, ev.Time.IsZero())
		require.GreaterOrEqual(t, ev.Count, int64(0))
		require.GreaterOrEqual(t, ev.SeriesCount, int64(0))
		if noteWasValid {
			require.True(t, utf8.ValidString(ev.Note), "note %q", ev.Note)
		}

		// Encode then decode again gives the same Event.
		lr2 := plog.NewLogRecord()
		k8sevent.Encode(&ev, lr2)
		got, problems, found := k8sevent.Decode(pcommon.NewResource(), lr2, k8sevent.DecodeOptions{})
		require.True(t, found)
		require.Zero(t, problems, "problems %v re-decoding %v", problems, lr2.Attributes().AsRaw())
		requireSameEvent(t, &ev, &got)

		// And it needs no further repair.
		repaired, fatal := k8sevent.Sanitize(&got, fuzzNow)
		require.Zero(t, repaired, "repaired %v", repaired)
		require.Zero(t, fatal, "fatal %v", fatal)
	})
}

func requireSameTime(t *testing.T, name string, want, got time.Time) {
	t.Helper()
	require.True(t, want.Equal(got), "%s: want %v, got %v", name, want, got)
}

func requireSameEvent(t *testing.T, want, got *k8sevent.Event) {
	t.Helper()
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.UID, got.UID)
	// The own namespace is written only when it differs from the regarding
	// object's (by design): compare what it resolves to.
	require.Equal(t, want.ObjectNamespace(), got.ObjectNamespace())
	if want.Namespace != want.Regarding.Namespace {
		require.Equal(t, want.Namespace, got.Namespace)
	}
	require.Equal(t, want.Type, got.Type)
	require.Equal(t, want.Reason, got.Reason)
	require.Equal(t, want.Action, got.Action)
	require.Equal(t, want.Note, got.Note)
	require.Equal(t, want.Regarding, got.Regarding)
	require.Equal(t, want.Related, got.Related)
	require.Equal(t, want.ReportingController, got.ReportingController)
	require.Equal(t, want.ReportingInstance, got.ReportingInstance)
	require.Equal(t, want.SourceComponent, got.SourceComponent)
	require.Equal(t, want.SourceHost, got.SourceHost)
	require.Equal(t, want.Count, got.Count)
	require.Equal(t, want.SeriesCount, got.SeriesCount)
	require.Equal(t, want.SeriesState, got.SeriesState)
	require.Equal(t, want.Aggregated, got.Aggregated)
	requireSameTime(t, "Time", want.Time, got.Time)
	requireSameTime(t, "FirstTimestamp", want.FirstTimestamp, got.FirstTimestamp)
	requireSameTime(t, "LastTimestamp", want.LastTimestamp, got.LastTimestamp)
	requireSameTime(t, "EventTime", want.EventTime, got.EventTime)
	requireSameTime(t, "SeriesLastObservedTime", want.SeriesLastObservedTime, got.SeriesLastObservedTime)
}
