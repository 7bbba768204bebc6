package engine

import (
	"slices"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A version 8 snapshot holds each state's Event packed: the tag and key
// fields of its layout (its cache key), then every other field of fType
// to lastField, in field order, each length-prefixed. The layout of each
// tag is fixed: the fields below are what version 8 knew of an Event.

// v8Rest is the fields a version 8 packing of l holds after its key.
func v8Rest(l *layout) []field {
	var rest []field
	for f := fType; f <= lastField; f++ {
		if !slices.Contains(l.key, f) {
			rest = append(rest, f)
		}
	}
	return rest
}

// v8Pack appends ev's version 8 packing in l to buf.
func v8Pack(buf []byte, l *layout, ev *k8sevent.Event) []byte {
	return appendFields(l.appendKey(buf, ev), ev, v8Rest(l))
}

// v8Unpack reads a version 8 packing of l into dst; ok is false if packed
// is not one.
func v8Unpack(l *layout, packed string, dst *k8sevent.Event) (ok bool) {
	if packed == "" || packed[0] != l.tag {
		return false
	}
	s := packed[1:]
	for _, fields := range [2][]field{l.key, v8Rest(l)} {
		for _, f := range fields {
			var ok bool
			if s == "" { // every field is there, if empty as a zero length
				return false
			}
			if *f.of(dst), s, ok = nextField(s); !ok {
				return false
			}
		}
	}
	return s == ""
}
