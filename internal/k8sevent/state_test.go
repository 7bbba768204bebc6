package k8sevent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestEncodeStateRoundTrips: what EncodeState writes is what Decode reads,
// in the fields of one mode only, over any state keys the record had.
func TestEncodeStateRoundTrips(t *testing.T) {
	first, last := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC), time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)
	for _, st := range []k8sevent.State{
		{Name: "web-0.a", SeriesState: k8sevent.StateSingleton, Count: 1, First: first.UnixNano(), Last: first.UnixNano(), NewOccurrences: 1},
		{Name: "web-0.b", SeriesState: k8sevent.StateOngoing, Count: 7, First: first.UnixNano(), Last: last.UnixNano(), NewOccurrences: 3},
		{Name: "web-0.c", Count: 9, First: first.UnixNano(), Last: last.UnixNano(), Aggregated: true},
	} {
		lr := plog.NewLogRecord()
		lr.Attributes().PutInt(k8sevent.AttrSeriesCount, 555) // left over from the input
		lr.Attributes().PutInt(k8sevent.AttrNewOccurrences, 555)
		lr.Attributes().PutStr(k8sevent.AttrEventUID, "input-uid")
		k8sevent.EncodeState(lr, &st)
		var ev k8sevent.Event
		_, _ = k8sevent.DecodeAttributes(lr.Attributes(), &ev, k8sevent.DecodeOptions{})
		require.Equal(t, k8sevent.EventName, lr.EventName())
		require.Equal(t, st.Name, ev.Name)
		require.Empty(t, ev.UID, "the input's uid does not describe the object written")
		require.Equal(t, st.Count, ev.Occurrences(), st.Name)
		require.Equal(t, st.SeriesState, ev.SeriesState)
		require.Equal(t, st.Aggregated, ev.Aggregated)
		v, ok := lr.Attributes().Get(k8sevent.AttrNewOccurrences)
		require.True(t, ok, "written also when 0: a record that only repeats adds nothing")
		require.Equal(t, st.NewOccurrences, v.Int())
		require.Equal(t, st.NewOccurrences, ev.NewOccurrences)
		if st.SeriesState == "" {
			require.Zero(t, ev.SeriesCount)
			require.True(t, ev.FirstTimestamp.Equal(first) && ev.LastTimestamp.Equal(last))
		} else {
			require.Zero(t, ev.Count)
			require.True(t, ev.EventTime.Equal(first.Truncate(time.Microsecond)))
		}
	}
}

// TestStoredEventOccurrences: a stored Event of either API stands for its
// series count, else its count, else one.
func TestStoredEventOccurrences(t *testing.T) {
	require.EqualValues(t, 1, k8sevent.CoreV1Occurrences(&corev1.Event{}))
	require.EqualValues(t, 4, k8sevent.CoreV1Occurrences(&corev1.Event{Count: 4}))
	require.EqualValues(t, 6, k8sevent.CoreV1Occurrences(&corev1.Event{Count: 4, Series: &corev1.EventSeries{Count: 6}}))
	require.EqualValues(t, 1, k8sevent.EventsV1Occurrences(&eventsv1.Event{}))
	require.EqualValues(t, 3, k8sevent.EventsV1Occurrences(&eventsv1.Event{DeprecatedCount: 3}))
	require.EqualValues(t, 8, k8sevent.EventsV1Occurrences(&eventsv1.Event{Series: &eventsv1.EventSeries{Count: 8}}))
}
