package k8sevent_test

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestEveryFieldSurvivesARecord: an Event with every field set, found by
// reflection at any depth, comes back whole from its log record. A field
// added to Event fails here until the record codec writes and reads it.
func TestEveryFieldSurvivesARecord(t *testing.T) {
	var ev k8sevent.Event
	n := 0
	var set func(v reflect.Value, path string)
	set = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+v.Type().Field(i).Name
			n++
			switch {
			case f.Kind() == reflect.String:
				f.SetString("value-" + strconv.Itoa(n))
			case f.Kind() == reflect.Int64:
				f.SetInt(int64(n))
			case f.Kind() == reflect.Bool:
				f.SetBool(true)
			case f.Type() == reflect.TypeFor[time.Time]():
				f.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(n), 0).UTC())) // whole seconds: MicroTime keeps them
			case f.Kind() == reflect.Struct:
				set(f, name+".")
			default:
				t.Fatalf("field %s: set it here (kind %s)", name, f.Kind())
			}
		}
	}
	set(reflect.ValueOf(&ev).Elem(), "")
	ev.Type = k8sevent.TypeWarning // the codec spells a known type as the severity
	got := throughRecord(t, ev)
	require.Equal(t, ev, got)
}
