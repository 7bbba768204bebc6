package engine

import (
	"encoding/binary"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// field names one string field of an Event: the fields keys are made of,
// and, fType to lastField in this order, those a version 8 snapshot packs
// (see migrate_v8.go). A field added to the Event needs no entry here
// unless a key is to hold it, and then one after lastField.
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
// (its state's Event holds it, so timer records carry it).
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

// layout is how one cache keys an Event: a tag byte, then the key fields,
// each length-prefixed, so distinct field tuples never share a key
// (client-go joins with "", where "ab"+"c" meets "a"+"bc"). The key's bytes
// name the Event objects (see newState): they must not change.
type layout struct {
	tag byte
	key []field
}

func newLayout(tag byte, key ...field) layout { return layout{tag: tag, key: key} }

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

func appendFields(buf []byte, ev *k8sevent.Event, fields []field) []byte {
	for _, f := range fields {
		s := *f.of(ev)
		buf = append(binary.AppendUvarint(buf, uint64(len(s))), s...)
	}
	return buf
}

// readKey sets ev's key fields of l to their values in key, a key of l
// less an empty cluster name's byte (see stateKey), sharing its memory.
// It reports false, having set some, for a key it cannot read so: one
// whose cluster name ends in a zero byte, which stateKey cut.
func (l *layout) readKey(key string, ev *k8sevent.Event) bool {
	s := key[1:]
	for _, f := range l.key {
		var ok bool
		if *f.of(ev), s, ok = nextField(s); !ok {
			return false
		}
	}
	return s == ""
}

// nextField splits s at the end of its first length-prefixed field; ok is
// false if s holds none (an empty s reads as an empty field).
func nextField(s string) (value, rest string, ok bool) {
	n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	if w <= 0 || n > uint64(len(s)-w) {
		return "", "", s == ""
	}
	return s[w : w+int(n)], s[w+int(n):], true
}

// nameKey is the part of a key that names its Event objects: without the
// empty cluster name of a record that states none, so that such records
// get the names they got before keys had a cluster.
func nameKey(key string) string { return strings.TrimSuffix(key, "\x00") }
