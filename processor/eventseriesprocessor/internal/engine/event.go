package engine

import (
	"reflect"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A state holds the Event of its first occurrence (state.ev), so that the
// fields of the record contract go on the records no input carries.
// Observe does not retain its input's strings: a new state copies them,
// found by reflection once, into one string of its own.

// stateEvent is what a state keeps of an Event: every field of
// k8sevent.Event but those each record of an Event object states of its
// own (the object's name and uid, counts and times, the fields the
// processor writes), which its records state from the state. A field
// added to k8sevent.Event goes here and in the two functions below, or
// timer records drop it: TestTimerRecordsCarryEveryField fails until it
// does. (The whole Event would need no such line, at some 200 bytes more
// per state than the retained heap budget has.)
type stateEvent struct {
	Namespace                   string
	Type, Reason, Action, Note  string
	Regarding, Related          k8sevent.ObjectRef
	Cluster                     k8sevent.Cluster
	ReportingController         string
	ReportingInstance           string
	SourceComponent, SourceHost string
}

func newStateEvent(ev *k8sevent.Event) stateEvent {
	return stateEvent{Namespace: ev.Namespace, Type: ev.Type, Reason: ev.Reason, Action: ev.Action, Note: ev.Note,
		Regarding: ev.Regarding, Related: ev.Related, Cluster: ev.Cluster,
		ReportingController: ev.ReportingController, ReportingInstance: ev.ReportingInstance,
		SourceComponent: ev.SourceComponent, SourceHost: ev.SourceHost}
}

func (s *stateEvent) event() k8sevent.Event {
	return k8sevent.Event{Namespace: s.Namespace, Type: s.Type, Reason: s.Reason, Action: s.Action, Note: s.Note,
		Regarding: s.Regarding, Related: s.Related, Cluster: s.Cluster,
		ReportingController: s.ReportingController, ReportingInstance: s.ReportingInstance,
		SourceComponent: s.SourceComponent, SourceHost: s.SourceHost}
}

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
// own, and without the related object's resourceVersion, which timer
// records have never carried.
func ownless(ev *k8sevent.Event) k8sevent.Event {
	s := newStateEvent(ev)
	s.Related.ResourceVersion = ""
	return s.event()
}
