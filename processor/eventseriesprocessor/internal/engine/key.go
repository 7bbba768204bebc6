package engine

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// field names one string field of an Event.
type field uint8

const (
	fType field = iota
	fAction
	fReason
	fController
	fInstance
	fRegKind
	fRegNamespace
	fRegName
	fRegUID
	fRegAPIVersion
	fRegFieldPath
	fRegResourceVersion
	fRelKind
	fRelNamespace
	fRelName
	fRelUID
	fRelAPIVersion
	fRelFieldPath
	fSourceComponent
	fSourceHost
	fNote
	fNamespace
	fClusterName
	fClusterUID
	lastField = fClusterUID
)

// clusterFields end every key: two named clusters' identical objects stay
// apart. The cluster's uid is not part of any key: the receiver writes it
// once it could read it, and a record gaining it must stay in its series
// (it is packed with the other fields, so timer records carry it).
var clusterFields = []field{fClusterName}

func (f field) of(ev *k8sevent.Event) *string {
	switch f {
	case fType:
		return &ev.Type
	case fAction:
		return &ev.Action
	case fReason:
		return &ev.Reason
	case fController:
		return &ev.ReportingController
	case fInstance:
		return &ev.ReportingInstance
	case fRegKind:
		return &ev.Regarding.Kind
	case fRegNamespace:
		return &ev.Regarding.Namespace
	case fRegName:
		return &ev.Regarding.Name
	case fRegUID:
		return &ev.Regarding.UID
	case fRegAPIVersion:
		return &ev.Regarding.APIVersion
	case fRegFieldPath:
		return &ev.Regarding.FieldPath
	case fRegResourceVersion:
		return &ev.Regarding.ResourceVersion
	case fRelKind:
		return &ev.Related.Kind
	case fRelNamespace:
		return &ev.Related.Namespace
	case fRelName:
		return &ev.Related.Name
	case fRelUID:
		return &ev.Related.UID
	case fRelAPIVersion:
		return &ev.Related.APIVersion
	case fRelFieldPath:
		return &ev.Related.FieldPath
	case fSourceComponent:
		return &ev.SourceComponent
	case fSourceHost:
		return &ev.SourceHost
	case fNote:
		return &ev.Note
	case fClusterName:
		return &ev.Cluster.Name
	case fClusterUID:
		return &ev.Cluster.UID
	default:
		return &ev.Namespace
	}
}

var relatedFields = []field{fRelKind, fRelNamespace, fRelName, fRelUID, fRelAPIVersion, fRelFieldPath}

// layout is how one cache packs an Event: a tag byte and the key fields
// (the cache key is this prefix), then the other fields needed to rebuild
// the Event for records that no input carries (heartbeats, finishes,
// flushes). Every field is length-prefixed, so distinct field tuples never
// share a key (client-go joins with "", where "ab"+"c" meets "a"+"bc").
// The key's bytes name the Event objects (see newState): they must not
// change.
type layout struct {
	tag  byte
	key  []field
	rest []field
}

// newLayout puts every field of an Event once in the layout: the key's
// first, in their order, then the others in field order.
func newLayout(tag byte, key ...field) layout {
	l := layout{tag: tag, key: key}
	for f := fType; f <= lastField; f++ {
		if !slices.Contains(key, f) {
			l.rest = append(l.rest, f)
		}
	}
	return l
}

// seriesLayout is the isomorphic key of events.k8s.io series (client-go
// tools/events getKey), resourceVersion optional.
func seriesLayout(withResourceVersion bool) layout {
	key := []field{fType, fAction, fReason, fController, fInstance,
		fRegKind, fRegNamespace, fRegName, fRegUID, fRegAPIVersion, fRegFieldPath}
	if withResourceVersion {
		key = append(key, fRegResourceVersion)
	}
	return newLayout('S', append(append(key, relatedFields...), clusterFields...)...)
}

// identicalLayout is client-go tools/record getEventKey plus the reporting
// controller and instance, so that two apps posing the same source stay apart.
var identicalLayout = newLayout('I', fSourceComponent, fSourceHost,
	fRegKind, fRegNamespace, fRegName, fRegFieldPath, fRegUID, fRegAPIVersion,
	fType, fReason, fNote, fController, fInstance, fClusterName)

// aggregateLayout is client-go EventAggregatorByReasonFunc's key.
var aggregateLayout = newLayout('A', fSourceComponent, fSourceHost,
	fRegKind, fRegNamespace, fRegName, fRegUID, fRegAPIVersion,
	fType, fReason, fController, fInstance, fClusterName)

func (l *layout) appendKey(buf []byte, ev *k8sevent.Event) []byte {
	return appendFields(append(buf, l.tag), ev, l.key)
}

// appendRest appends the fields of ev that are not in l's key: after
// appendKey's result, ev's packed form.
func (l *layout) appendRest(buf []byte, ev *k8sevent.Event) []byte {
	return appendFields(buf, ev, l.rest)
}

func appendFields(buf []byte, ev *k8sevent.Event, fields []field) []byte {
	for _, f := range fields {
		s := *f.of(ev)
		buf = append(binary.AppendUvarint(buf, uint64(len(s))), s...)
	}
	return buf
}

// unpack rebuilds into dst the fields packed holds; the strings share its
// memory. packed must pass check.
func (l *layout) unpack(packed string, dst *k8sevent.Event) {
	s := packed[1:]
	for _, fields := range [2][]field{l.key, l.rest} {
		for _, f := range fields {
			*f.of(dst), s = nextField(s)
		}
	}
}

// field is f's value in packed (a string sharing its memory).
func (l *layout) field(packed string, f field) (value string) {
	s := packed[1:]
	for _, fields := range [2][]field{l.key, l.rest} {
		for _, g := range fields {
			if value, s = nextField(s); g == f {
				return value
			}
		}
	}
	return ""
}

// check reports whether packed is a packing of l (what unpack can read)
// and the length of its key prefix.
func (l *layout) check(packed string) (keyLen int, ok bool) {
	if packed == "" || packed[0] != l.tag {
		return 0, false
	}
	s := packed[1:]
	for i, fields := range [2][]field{l.key, l.rest} {
		for range fields {
			n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
			if w <= 0 || n > uint64(len(s)-w) {
				return 0, false
			}
			s = s[w+int(n):]
		}
		if i == 0 {
			keyLen = len(packed) - len(s)
		}
	}
	return keyLen, s == ""
}

// nextField splits a checked packing at the end of its next field.
func nextField(s string) (value, rest string) {
	n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	end := w + int(n)
	return s[w:end], s[end:]
}

// nameKey is the part of a key that names its Event objects: without the
// empty cluster name of a record that states none, so that such records
// get the names they got before keys had a cluster.
func nameKey(key string) string { return strings.TrimSuffix(key, "\x00") }
