package engine

import (
	"reflect"
	"strings"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A state holds the k8sevent.Event of its first occurrence (state.ev), so
// that every field of the record contract goes on the records no input
// carries. Observe does not retain its input's strings: a new state copies
// them, found by reflection once, into one string of its own.

// stringFields are the paths (field indexes from k8sevent.Event down) of
// the Event's string fields, in its own structs at any depth.
var stringFields = stringPaths(reflect.TypeFor[k8sevent.Event](), nil)

func stringPaths(t reflect.Type, at []int) (paths [][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		path := append(append([]int(nil), at...), i)
		switch {
		case !f.IsExported():
		case f.Type.Kind() == reflect.String:
			paths = append(paths, path)
		case f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath():
			paths = append(paths, stringPaths(f.Type, path)...)
		}
	}
	return paths
}

func fieldAt(v reflect.Value, path []int) reflect.Value {
	for _, i := range path {
		v = v.Field(i)
	}
	return v
}

// ownStrings makes one string of prefix and every string of ev, points
// ev's strings at their copies in it, and returns it.
func ownStrings(prefix []byte, ev *k8sevent.Event) string {
	v := reflect.ValueOf(ev).Elem()
	var at [64]reflect.Value // on the stack: the Event has some 30 strings
	fields := at[:0]
	n := len(prefix)
	for _, path := range stringFields {
		f := fieldAt(v, path)
		if f.Len() > 0 {
			fields = append(fields, f)
			n += f.Len()
		}
	}
	var b strings.Builder
	b.Grow(n)
	b.Write(prefix)
	for _, f := range fields {
		b.WriteString(f.String())
	}
	s := b.String()
	rest := s[len(prefix):]
	for _, f := range fields {
		n := f.Len()
		f.SetString(rest[:n])
		rest = rest[n:]
	}
	return s
}

// ownless is ev without what each record of an Event object states of its
// own: the object's name and uid, counts and times, and the fields the
// processor writes. A state's records state those from the state; every
// other field goes on its records as its first occurrence had it, but the
// related object's resourceVersion, which they have never carried.
func ownless(ev *k8sevent.Event) k8sevent.Event {
	s := *ev
	s.Name, s.UID = "", ""
	s.Related.ResourceVersion = ""
	s.Time, s.EventTime, s.FirstTimestamp, s.LastTimestamp = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	s.Count, s.SeriesCount, s.SeriesLastObservedTime = 0, 0, time.Time{}
	s.SeriesState, s.Aggregated, s.NewOccurrences = "", false, 0
	return s
}
