package k8sevent_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Regression tests for bugs the fuzz test and the contract tests found.

func decodeAttrs(t *testing.T, kv ...string) (k8sevent.Event, k8sevent.Problem) {
	t.Helper()
	lr := plog.NewLogRecord()
	for i := 0; i < len(kv); i += 2 {
		lr.Attributes().PutStr(kv[i], kv[i+1])
	}
	ev, p, _ := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
	return ev, p
}

func reencode(ev k8sevent.Event) (k8sevent.Event, k8sevent.Problem, plog.LogRecord) {
	lr := plog.NewLogRecord()
	k8sevent.Encode(&ev, lr)
	got, p, _ := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
	return got, p, lr
}

func TestSanitizeNeverLeavesAnEmptyReason(t *testing.T) {
	ev := goodEvent()
	ev.Reason = strings.Repeat("\x80", 200) // not UTF-8: Truncate cuts bytes
	_, fatal := k8sevent.Sanitize(&ev, now)
	assert.Zero(t, fatal&k8sevent.ProblemMissingReason)
	assert.Len(t, ev.Reason, k8sevent.MaxFieldBytes)
}

func TestDoubleCountOfTwoToThe63IsBad(t *testing.T) {
	lr := plog.NewLogRecord()
	lr.Attributes().PutDouble(k8sevent.AttrCount, math.Exp2(63))
	ev, p, _ := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
	assert.NotZero(t, p&k8sevent.ProblemBadValue)
	assert.Zero(t, ev.Count)
}

// Times outside int64 nanoseconds (1677..2262) can become neither a record
// timestamp nor, at the extremes, an RFC 3339 string again: rejected.
func TestTimesOutsideNanosecondRangeAreBad(t *testing.T) {
	for _, s := range []string{"9999-12-31T23:59:59-23:00", "0000-01-01T00:00:00+01:00", "3000-01-01T00:00:00Z", "1600-01-01T00:00:00Z"} {
		ev, p := decodeAttrs(t, k8sevent.AttrReason, "R", k8sevent.AttrEventTime, s, k8sevent.AttrLastTimestamp, s)
		assert.NotZero(t, p&k8sevent.ProblemBadValue, s)
		assert.True(t, ev.EventTime.IsZero() && ev.LastTimestamp.IsZero(), s)
	}
}

func TestMicroTimeFieldsRoundTrip(t *testing.T) {
	ev, p := decodeAttrs(t, k8sevent.AttrReason, "R",
		k8sevent.AttrEventTime, "2026-03-01T12:00:00.123456789Z",
		k8sevent.AttrSeriesLastObserved, "2026-03-01T12:00:01.000000001Z")
	require.Zero(t, p)
	assert.Equal(t, 123456000, ev.EventTime.Nanosecond(), "MicroTime holds µs")
	got, _, _ := reencode(ev)
	assert.True(t, got.EventTime.Equal(ev.EventTime))
	assert.True(t, got.SeriesLastObservedTime.Equal(ev.SeriesLastObservedTime))
}

// time.Time.String() prints zones without a name as the offset, twice.
func TestStartTimeInNumericZone(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, loc := range []*time.Location{time.FixedZone("+0330", 12600), time.FixedZone("", 20700), time.UTC} {
		s := created.In(loc).String()
		ev, p := decodeAttrs(t, k8sevent.AttrReason, "R", k8sevent.AttrStartTime, s)
		assert.Zero(t, p, "%q", s)
		assert.True(t, ev.FirstTimestamp.Equal(created), "%q -> %v", s, ev.FirstTimestamp)
	}
}

// A reporting controller the API server refuses is dropped for the writer
// to fill with its own (the exporter's reporting_controller).
func TestSanitizeDropsAnInvalidReportingController(t *testing.T) {
	ev := goodEvent()
	ev.ReportingController = "!!"
	repaired, fatal := k8sevent.Sanitize(&ev, now)
	assert.Equal(t, k8sevent.ProblemBadController, repaired)
	assert.Zero(t, fatal)
	assert.Empty(t, ev.ReportingController)
	ev.ReportingController = "k8sevents.io/exporter"
	assert.NoError(t, k8sevent.Validate(&ev, k8sevent.APIEventsV1))
}
