package engine

import (
	"reflect"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A state holds the Description of its first occurrence's Event (state.ev),
// so that the fields of the record contract go on the records no input
// carries. It keeps the Description, not the whole Event: the fields each
// Event object states of its own are more than the retained-heap budget per
// open series allows. Observe does not retain its input's strings: a new
// state copies them, found by reflection once per engine, into one string
// of its own.

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
	d := ev.Description()
	d.Related.ResourceVersion = ""
	return d.Event()
}
