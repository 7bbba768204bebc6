package engine

import (
	"fmt"
	"math"
	"slices"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Version 8 snapshots: after the header (see snapshot.go), varints are
// encoding/binary's, strings length-prefixed, every cache listed least
// recently used first:
//
//	spam key, now, made, heartbeat_interval (ns)
//	states:  count, then each: packed Event, name, count, emitted, first,
//	         last, seenAt, nextBeat, deadline, heap index (-1: none), flags
//	         (visible, started, aggregated, latest note differs from the
//	         packed one, counted in its bucket's events), then that note if
//	         it differs
//	groups:  count, then each: key, last, notes (count, then each)
//	buckets: count, then each: key, tokens (float64 bits), last allowed,
//	         events (legacy: events of the key already written)
//	totals:  flags (a generation was forgotten), first time forgotten, then
//	         the recent and the older generation: count, then each by
//	         ascending key hash (uint64, see objectHash): count, first
//
// A packed Event is the tag and key fields of its layout (its cache key),
// then every other field of fType to lastField, in field order, each
// length-prefixed: what version 8 knew of an Event.

// readV8 reads the body of a version 8 snapshot into s.
func (e *Engine) readV8(r *reader, s *snapshot) error {
	s.SpamKey = r.str()
	s.Now, s.StatesMade, s.HeartbeatInterval = r.int(), r.uint(), r.int()
	for range r.entries(len(r.b), "series") {
		packed, st := r.str(), savedState{Name: r.str()}
		for _, v := range [...]*int64{&st.Count, &st.Emitted, &st.First, &st.Last, &st.SeenAt, &st.NextBeat, &st.Deadline, &st.HeapIndex} {
			*v = r.int()
		}
		flags := r.byte()
		st.Visible, st.Started, st.Aggregated, st.InBucket = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&16 != 0
		var note string
		if flags&8 != 0 {
			note = r.str()
		}
		if r.err != nil {
			return r.err
		}
		l := &e.series
		switch {
		case packed != "" && packed[0] == aggregateLayout.tag:
			l, st.Summary = &aggregateLayout, true
		case e.cfg.Legacy:
			l = &identicalLayout
		}
		if !v8Unpack(l, packed, &st.Event) {
			return fmt.Errorf("state %d: not a packed Event of this mode", len(s.States))
		}
		if flags&8 != 0 {
			st.Event.Note = note
		}
		s.States = append(s.States, st)
	}
	for range r.entries(len(r.b), "aggregation groups") {
		g := savedGroup{Key: r.str(), Last: r.int()}
		for range r.entries(len(r.b), "notes") {
			g.Notes = append(g.Notes, r.str())
		}
		s.Groups = append(s.Groups, g)
	}
	for range r.entries(len(r.b), "spam buckets") {
		b := savedBucket{Key: r.str(), Tokens: math.Float64frombits(r.u64()), Last: r.int()}
		b.Events = int(min(r.uint(), math.MaxInt32))
		s.Buckets = append(s.Buckets, b)
	}
	s.Forgot, s.ForgotFirst = r.byte()&1 != 0, r.int()
	for _, gen := range []*[]savedTotal{&s.Recent, &s.Older} {
		for range r.entries(len(r.b)/10, "totals") {
			*gen = append(*gen, savedTotal{Key: r.u64(), Count: r.int(), First: r.int()})
		}
	}
	if r.err == nil && len(r.b) > 0 {
		return fmt.Errorf("%d bytes after the end", len(r.b))
	}
	return r.err
}

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

// v8Unpack reads a version 8 packing of l into dst; ok is false if packed
// is not one.
func v8Unpack(l *layout, packed string, dst *k8sevent.Event) (ok bool) {
	if packed == "" || packed[0] != l.tag {
		return false
	}
	s := packed[1:]
	for _, fields := range [2][]field{l.key, v8Rest(l)} {
		for _, f := range fields {
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
