package engine

import (
	"reflect"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A state holds the Event of its first occurrence (state.ev), so that the
// fields of the record contract go on the records no input carries.
// Observe does not retain its input's strings: a new state copies them,
// found by reflection once per engine, into one string of its own.

// stateEvent is what a state keeps of an Event: every field of
// k8sevent.Event but those each record of an Event object states of its
// own (the object's name and uid, counts and times, the fields the
// processor writes), which its records state from the state. A field
// added to k8sevent.Event goes here and in the two functions below, or
// timer records drop it: TestTimerRecordsCarryEveryField fails until it
// does. The whole Event would need no such line, but its per-record
// fields are more than the retained-heap budget per open series allows.
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

// stringsOf points at every string field of ev, in its own structs at
// any depth, found by reflection: a string field added to the Event is
// among them.
func stringsOf(ev *k8sevent.Event) []*string {
	var ptrs []*string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f, sf := v.Field(i), v.Type().Field(i)
			switch {
			case !sf.IsExported():
			case f.Kind() == reflect.String:
				ptrs = append(ptrs, f.Addr().Interface().(*string))
			case f.Kind() == reflect.Struct && f.Type().PkgPath() == v.Type().PkgPath():
				walk(f)
			}
		}
	}
	walk(reflect.ValueOf(ev).Elem())
	return ptrs
}

// ownStrings makes one string of prefix and the strings strs point at,
// points them at their copies in it, and returns it.
func ownStrings(prefix []byte, strs []*string) string {
	n := len(prefix)
	for _, p := range strs {
		n += len(*p)
	}
	var b strings.Builder
	b.Grow(n)
	b.Write(prefix)
	for _, p := range strs {
		b.WriteString(*p)
	}
	s := b.String()
	rest := s[len(prefix):]
	for _, p := range strs {
		*p, rest = rest[:len(*p)], rest[len(*p):]
	}
	return s
}

// ownless is ev without what each record of an Event object states of its
// own, and without the related object's resourceVersion: timer records
// leave it out, as the output goldens hold.
func ownless(ev *k8sevent.Event) k8sevent.Event {
	s := newStateEvent(ev)
	s.Related.ResourceVersion = ""
	return s.event()
}
