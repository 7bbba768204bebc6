package k8sevent_test

import (
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// testdata/duplicated-keys.json is an OTLP/JSON record whose attribute
// maps hold k8s.event.series.count and k8s.event.name twice, which the OTLP
// wire format allows and pcommon.Map keeps.
func unmarshalDuplicated(t *testing.T) plog.Logs {
	t.Helper()
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(readFile(t, "testdata/duplicated-keys.json"))
	require.NoError(t, err)
	require.Equal(t, 8, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().Len(),
		"the wire format keeps both copies; the test needs them")
	return ld
}

// TestHostileDuplicateKeysFirstCopyWins: the codec reads the first copy of
// a duplicated key, the copy pcommon.Map.Get and so every other collector
// component reads, and reports the duplicate.
func TestHostileDuplicateKeysFirstCopyWins(t *testing.T) {
	ld := unmarshalDuplicated(t)
	rl := ld.ResourceLogs().At(0)
	ev, problems, found := k8sevent.Decode(rl.Resource(), rl.ScopeLogs().At(0).LogRecords().At(0), k8sevent.DecodeOptions{})
	require.True(t, found)
	require.Equal(t, "web-0.own", ev.Name)
	require.EqualValues(t, 1, ev.SeriesCount, "the record's first copy, over the resource's")
	require.NotZero(t, problems&k8sevent.ProblemDuplicateKey)
	require.Contains(t, problems.String(), "duplicate_key")

	var res k8sevent.Event
	p, _ := k8sevent.DecodeAttributes(rl.Resource().Attributes(), &res, k8sevent.DecodeOptions{})
	require.EqualValues(t, 2, res.SeriesCount)
	require.NotZero(t, p&k8sevent.ProblemDuplicateKey)
}

// TestHostileDuplicateKeysDropped: after DropDuplicateKeys every contract
// key is there once, with the value the codec read; RemoveKeys removes
// every copy, where pcommon.Map.Remove would leave the second behind.
func TestHostileDuplicateKeysDropped(t *testing.T) {
	ld := unmarshalDuplicated(t)
	rl := ld.ResourceLogs().At(0)
	lr := rl.ScopeLogs().At(0).LogRecords().At(0)
	before, _, _ := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})

	k8sevent.DropDuplicateKeys(lr.Attributes())
	k8sevent.DropDuplicateKeys(rl.Resource().Attributes())
	require.Equal(t, 6, lr.Attributes().Len())
	require.Equal(t, 1, rl.Resource().Attributes().Len())
	after, problems, _ := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
	require.Zero(t, problems&k8sevent.ProblemDuplicateKey)
	require.Equal(t, before, after)

	ld = unmarshalDuplicated(t)
	attrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes()
	k8sevent.RemoveKeys(attrs, []string{k8sevent.AttrSeriesCount})
	_, ok := attrs.Get(k8sevent.AttrSeriesCount)
	require.False(t, ok, "every copy removed")
	require.Equal(t, 6, attrs.Len())
}

// TestContractKeysAreDistinct: the table the fuzzers and writers use has
// every key once, and each decodes (so none is missing from the reader).
func TestContractKeysAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range k8sevent.ContractKeys {
		require.False(t, seen[k], k)
		seen[k] = true
		lr := plog.NewLogRecord()
		lr.Attributes().PutStr(k, "x")
		lr.Attributes().PutStr(k+".not", "y")
		var ev k8sevent.Event
		_, found := k8sevent.DecodeAttributes(lr.Attributes(), &ev, k8sevent.DecodeOptions{})
		require.Equal(t, k != k8sevent.AttrNamespace && k != k8sevent.AttrNodeName && k != k8sevent.AttrClusterName && k != k8sevent.AttrClusterUID, found, k)
	}
	require.LessOrEqual(t, len(seen), 64, "a KeySet has a bit for each contract key")
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}

// TestHostileOversizedFieldsRefused: every name-like field one byte past
// what a real object can have makes the record fatal (refused whole, not
// cut: a cut identity would merge distinct objects); at the limit it passes.
func TestHostileOversizedFieldsRefused(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	fields := map[string]func(*k8sevent.Event, string){
		"name": func(e *k8sevent.Event, s string) { e.Name = s }, "uid": func(e *k8sevent.Event, s string) { e.UID = s },
		"source.component":          func(e *k8sevent.Event, s string) { e.SourceComponent = s },
		"source.host":               func(e *k8sevent.Event, s string) { e.SourceHost = s },
		"regarding.kind":            func(e *k8sevent.Event, s string) { e.Regarding.Kind = s },
		"regarding.name":            func(e *k8sevent.Event, s string) { e.Regarding.Name = s },
		"regarding.uid":             func(e *k8sevent.Event, s string) { e.Regarding.UID = s },
		"regarding.fieldPath":       func(e *k8sevent.Event, s string) { e.Regarding.FieldPath = s },
		"regarding.resourceVersion": func(e *k8sevent.Event, s string) { e.Regarding.ResourceVersion = s },
		"related.kind":              func(e *k8sevent.Event, s string) { e.Related.Kind = s },
		"related.name":              func(e *k8sevent.Event, s string) { e.Related.Name = s },
		"related.namespace":         func(e *k8sevent.Event, s string) { e.Related.Namespace = s },
		"related.uid":               func(e *k8sevent.Event, s string) { e.Related.UID = s },
	}
	base := func() k8sevent.Event {
		return k8sevent.Event{Reason: "BackOff", Type: k8sevent.TypeNormal, Time: time.Unix(1e9, 0),
			Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: "default", Name: "web-0"}}
	}
	for name, set := range fields {
		ev := base()
		set(&ev, long(k8sevent.MaxNameBytes))
		_, fatal := k8sevent.Sanitize(&ev, time.Now())
		require.Zero(t, fatal&k8sevent.ProblemOversized, "%s at the limit", name)
		set(&ev, long(100<<10))
		_, fatal = k8sevent.Sanitize(&ev, time.Now())
		require.NotZero(t, fatal&k8sevent.ProblemOversized, "%s of 100 KB", name)
	}
	for name, set := range map[string]func(*k8sevent.Event, string){
		"regarding.apiVersion": func(e *k8sevent.Event, s string) { e.Regarding.APIVersion = s },
		"reportingController":  func(e *k8sevent.Event, s string) { e.ReportingController = s },
	} {
		ev := base()
		set(&ev, long(k8sevent.MaxQualifiedNameBytes+1))
		_, fatal := k8sevent.Sanitize(&ev, time.Now())
		require.NotZero(t, fatal&k8sevent.ProblemOversized, name)
	}
}

// TestHostileTruncateDoesNotPinTheOriginal: a cut string does not share the
// original's memory, so caching it does not keep the 100 KB alive.
func TestHostileTruncateDoesNotPinTheOriginal(t *testing.T) {
	huge := strings.Repeat("n", 100<<10)
	cut := k8sevent.Truncate(huge, k8sevent.MaxNoteBytes)
	require.Len(t, cut, k8sevent.MaxNoteBytes)
	require.NotSame(t, unsafe.StringData(huge), unsafe.StringData(cut))
	short := "short"
	require.Same(t, unsafe.StringData(short), unsafe.StringData(k8sevent.Truncate(short, 10)), "no copy when nothing is cut")
}
