package engine

import (
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"unsafe"

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
	// The cluster (issue 17 item 3): the last fields of every cache key, so
	// that a key of snapshot version 4 or older becomes today's by
	// appending two empty fields (see migrateKey).
	fClusterName
	fClusterUID
	lastField = fClusterUID
)

// clusterFields end every key: two clusters' identical objects stay apart.
var clusterFields = []field{fClusterName, fClusterUID}

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
type layout struct {
	tag  byte
	key  []field
	rest []field
	// Where the key's and the other fields are in an Event (see
	// fieldOffsets): what appendFields reads per record.
	keyAt, restAt []uintptr
	afterNote     []uintptr // the fields packed after the note (see note)
}

// allFields lists every field once, key fields first.
func newLayout(tag byte, key ...field) layout {
	in := make(map[field]bool, len(key))
	for _, f := range key {
		in[f] = true
	}
	l := layout{tag: tag, key: key}
	for f := fType; f <= lastField; f++ {
		if !in[f] {
			l.rest = append(l.rest, f)
		}
	}
	for _, f := range l.key {
		l.keyAt = append(l.keyAt, fieldOffsets[f])
	}
	for _, f := range l.rest {
		l.restAt = append(l.restAt, fieldOffsets[f])
	}
	all := append(append([]field(nil), l.key...), l.rest...)
	for _, f := range all[slices.Index(all, fNote)+1:] {
		l.afterNote = append(l.afterNote, fieldOffsets[f])
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
	fType, fReason, fNote, fController, fInstance, fClusterName, fClusterUID)

// aggregateLayout is client-go EventAggregatorByReasonFunc's key.
var aggregateLayout = newLayout('A', fSourceComponent, fSourceHost,
	fRegKind, fRegNamespace, fRegName, fRegUID, fRegAPIVersion,
	fType, fReason, fController, fInstance, fClusterName, fClusterUID)

// covers reports whether l's key holds every field of other's key.
func (l *layout) covers(other *layout) bool {
	for _, f := range other.key {
		if !slices.Contains(l.key, f) {
			return false
		}
	}
	return true
}

func (l *layout) appendKey(buf []byte, ev *k8sevent.Event) []byte {
	buf = append(buf, l.tag)
	return appendFields(buf, ev, l.keyAt)
}

// appendRest appends the fields of ev that are not in l's key: after
// appendKey's result, ev's packed form.
func (l *layout) appendRest(buf []byte, ev *k8sevent.Event) []byte {
	return appendFields(buf, ev, l.restAt)
}

// note is ev's note in packed, ev's packing: a string sharing packed's
// memory, found from ev's field lengths (field decodes every length before
// it, which cost a new series more than packing it).
func (l *layout) note(packed string, ev *k8sevent.Event) string {
	end := len(packed)
	for _, off := range l.afterNote {
		n := len(*(*string)(unsafe.Add(unsafe.Pointer(ev), off)))
		end -= n + uvarintLen(n)
	}
	return packed[end-len(ev.Note) : end]
}

func uvarintLen(n int) int {
	w := 1
	for ; n >= 0x80; n >>= 7 {
		w++
	}
	return w
}

// unpack rebuilds into dst the fields packed holds; the strings share its memory.
func (l *layout) unpack(packed string, dst *k8sevent.Event) {
	s := packed[1:]
	for _, fields := range [2][]field{l.key, l.rest} {
		for _, f := range fields {
			n, w := binary.Uvarint(unsafe.Slice(unsafe.StringData(s), len(s)))
			s = s[w:]
			*f.of(dst) = s[:n]
			s = s[n:]
		}
	}
}

// field is f's value in packed (a string sharing its memory).
func (l *layout) field(packed string, f field) string {
	s := packed[1:]
	for _, fields := range [2][]field{l.key, l.rest} {
		for _, g := range fields {
			n, w := binary.Uvarint(unsafe.Slice(unsafe.StringData(s), len(s)))
			s = s[w:]
			if g == f {
				return s[:n]
			}
			s = s[n:]
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
			n, w := binary.Uvarint(unsafe.Slice(unsafe.StringData(s), len(s)))
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

// unalignedLoads: this processor loads and stores words at any address.
const unalignedLoads = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" || runtime.GOARCH == "ppc64le" ||
	runtime.GOARCH == "s390x" || runtime.GOARCH == "386"

// appendFields appends the fields of ev at these offsets, each length
// prefixed. It runs for every key of every record, so it grows buf at
// most once, to room for fields of up to 127 bytes (a one-byte prefix),
// then writes each prefix and copies each field of up to 16 bytes by two
// loads and stores that may overlap, never reading outside the field: a
// call per field (append's, copy's) made the loop save and reload its
// registers each time. An empty field, most of a key's, costs one byte.
// Meeting a field of 128 bytes or more, it starts again on the general
// path.
func appendFields(buf []byte, ev *k8sevent.Event, offsets []uintptr) []byte {
	at := len(buf)
	if len(offsets) == 0 || !unalignedLoads {
		return appendLongFields(buf, unsafe.Pointer(ev), offsets)
	}
	buf = slices.Grow(buf, len(offsets)*0x80)
	base, dst := unsafe.Pointer(ev), unsafe.Pointer(unsafe.SliceData(buf[at:at+1]))
	i := 0 // dst+i stays inside buf: a pointer past its end is not one of its own
	for _, off := range offsets {
		s := *(*string)(unsafe.Add(base, off)) // *f.of(ev), without its switch
		n := len(s)
		*(*byte)(unsafe.Add(dst, i)) = byte(n)
		to, from := unsafe.Add(dst, i+1), unsafe.Pointer(unsafe.StringData(s))
		switch {
		case n == 0:
		case n >= 8 && n <= 16:
			a, b := *(*uint64)(from), *(*uint64)(unsafe.Add(from, n-8))
			*(*uint64)(to), *(*uint64)(unsafe.Add(to, n-8)) = a, b
		case n >= 4 && n < 8:
			a, b := *(*uint32)(from), *(*uint32)(unsafe.Add(from, n-4))
			*(*uint32)(to), *(*uint32)(unsafe.Add(to, n-4)) = a, b
		case n < 4:
			a, b, c := *(*byte)(from), *(*byte)(unsafe.Add(from, n/2)), *(*byte)(unsafe.Add(from, n-1))
			*(*byte)(to), *(*byte)(unsafe.Add(to, n/2)), *(*byte)(unsafe.Add(to, n-1)) = a, b, c
		case n < 0x80:
			copyLong(to, s)
		default:
			return appendLongFields(buf[:at], base, offsets)
		}
		i += 1 + n
	}
	return buf[:at+i]
}

// copyLong copies s to dst, which has room for it.
//
//go:noinline
func copyLong(dst unsafe.Pointer, s string) { copy(unsafe.Slice((*byte)(dst), len(s)), s) }

// appendLongFields is appendFields for fields of any length.
func appendLongFields(buf []byte, base unsafe.Pointer, offsets []uintptr) []byte {
	for _, off := range offsets {
		s := *(*string)(unsafe.Add(base, off))
		buf = append(binary.AppendUvarint(buf, uint64(len(s))), s...)
	}
	return buf
}

// fieldOffsets is where in a k8sevent.Event each field is, as field.of finds it.
var fieldOffsets = func() (offsets [lastField + 1]uintptr) {
	var ev k8sevent.Event
	for f := range offsets {
		offsets[f] = uintptr(unsafe.Pointer(field(f).of(&ev))) - uintptr(unsafe.Pointer(&ev))
	}
	return offsets
}()

// borrow views b as a string for a map lookup without copying. The string
// must not outlive the lookup or see b change.
func borrow(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// migrateKey turns a key of snapshot version 4 or older, whose layout had
// no cluster fields, into today's: the same key with two empty cluster
// fields at its end.
func migrateKey(key string) string { return key + "\x00\x00" }

// nameKey is the part of a key that names its Event objects: without the
// empty cluster fields of a record that states no cluster, so that such
// records get the names they got before keys had a cluster.
func nameKey(key string) string { return strings.TrimSuffix(key, "\x00\x00") }

// migratePacked turns a state packed by snapshot version 4 or older, whose
// key had keyFields fields and no cluster, into today's packing: two empty
// cluster fields at the end of its key prefix. What it cannot read it
// returns as it is, for check to refuse.
func migratePacked(packed string, keyFields int) string {
	if packed == "" {
		return packed
	}
	s := packed[1:]
	for range keyFields {
		n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		if w <= 0 || n > uint64(len(s)-w) {
			return packed
		}
		s = s[w+int(n):]
	}
	cut := len(packed) - len(s)
	return migrateKey(packed[:cut]) + packed[cut:]
}
