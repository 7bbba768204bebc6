package engine

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// recordOwnFields are the fields of k8sevent.Event each record of an Event
// object states of its own: the emission states them (Name, Count, First,
// Last, Kind, New, Aggregated), not its Event.
var recordOwnFields = map[string]bool{
	"Name": true, "UID": true, "Time": true, "EventTime": true, "FirstTimestamp": true,
	"LastTimestamp": true, "Count": true, "SeriesCount": true, "SeriesLastObservedTime": true,
	"SeriesState": true, "Aggregated": true, "NewOccurrences": true,
}

// setEveryField gives every field of v, at any depth of the Event's own
// structs, a value of its own, and returns the paths of the fields set.
func setEveryField(t *testing.T, v reflect.Value, at string, n *int) (paths []string) {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		path := at + sf.Name
		*n++
		switch {
		case f.Kind() == reflect.String:
			f.SetString("value-" + strconv.Itoa(*n))
		case f.Kind() == reflect.Int64:
			f.SetInt(int64(*n + 1))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(t0.Add(time.Duration(*n) * time.Second)))
		case f.Kind() == reflect.Struct:
			paths = append(paths, setEveryField(t, f, path+".", n)...)
			continue
		default:
			t.Fatalf("field %s: set it here (kind %s)", path, f.Kind())
		}
		paths = append(paths, path)
	}
	return paths
}

// TestTimerRecordsCarryEveryField: every field of k8sevent.Event set on the
// input goes on the records no input carries (heartbeats, ends, flushes,
// the write of a held-back count) as the input had it, but for the fields
// each record states of its own. A field added to the record contract
// needs nothing of the engine.
func TestTimerRecordsCarryEveryField(t *testing.T) {
	var in k8sevent.Event
	paths := setEveryField(t, reflect.ValueOf(&in).Elem(), "", new(int))
	in.Aggregated = false
	in.Count = 5 // five occurrences: a series
	for _, legacy := range []bool{false, true} {
		cfg := defaults()
		cfg.Legacy, cfg.HeartbeatInterval, cfg.FinishAfter = legacy, time.Minute, 5*time.Minute
		cfg.SpamBurst, cfg.SpamQPS = 1, 0.001 // the second record is held back
		e, err := New(cfg)
		require.NoError(t, err)
		ev := in
		ev.Time = t0
		ems := append([]Emission(nil), e.Observe(&ev, t0.UnixNano())...)
		ev.UID, ev.Count, ev.Time = "another object", 5, t0.Add(time.Second)
		ems = append(ems, e.Observe(&ev, ev.Time.UnixNano())...)
		ems = append(ems, e.Advance(t0.Add(2*time.Minute).UnixNano())...)
		ems = append(ems, e.Flush(t0.Add(2*time.Minute).UnixNano())...)
		ems = append(ems, e.Advance(t0.Add(time.Hour).UnixNano())...)
		timers := 0
		for _, em := range ems {
			if em.FromInput {
				continue
			}
			timers++
			got := reflect.ValueOf(em.Event)
			for _, path := range paths {
				top, _, _ := strings.Cut(path, ".")
				if recordOwnFields[top] || path == "Related.ResourceVersion" { // left out of timer records (ownless)
					continue
				}
				require.Equal(t, fieldByPath(reflect.ValueOf(in), path).Interface(), fieldByPath(got, path).Interface(),
					"legacy=%t %s record: field %s", legacy, KindNames[em.Kind], path)
			}
		}
		require.Positive(t, timers, "legacy=%t: records without an input", legacy)
	}
}

func fieldByPath(v reflect.Value, path string) reflect.Value {
	for {
		name, rest, more := strings.Cut(path, ".")
		v = v.FieldByName(name)
		if !more {
			return v
		}
		path = rest
	}
}

// TestStateKeepsAClusterNameEndingInAZeroByte: a state's Event shares its
// key's bytes, less the last one of a key whose cluster name is empty; a
// cluster name ending in a zero byte loses that byte from the key too, and
// the state's Event still holds it whole.
func TestStateKeepsAClusterNameEndingInAZeroByte(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		cfg := defaults()
		cfg.Legacy, cfg.SpamBurst, cfg.SpamQPS = legacy, 1, 0.001 // the later records are held back
		e, err := New(cfg)
		require.NoError(t, err)
		ev := podEvent("web-1", "BackOff", "x")
		ev.Cluster.Name = "east\x00"
		var timers int
		for i := range 3 {
			ev.Time = t0.Add(time.Duration(i) * time.Second)
			e.Observe(&ev, ev.Time.UnixNano())
		}
		for _, em := range e.Flush(t0.Add(time.Minute).UnixNano()) {
			require.False(t, em.FromInput)
			require.Equal(t, "east\x00", em.Event.Cluster.Name, "legacy=%t", legacy)
			timers++
		}
		require.Positive(t, timers, "legacy=%t", legacy)
	}
}
