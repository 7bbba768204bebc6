package eventsumconnector // import "github.com/k8sevents/otel-k8sevents/connector/eventsumconnector"

import (
	"math"
	"strconv"
	"strings"
)

// The sums, in pure code: no pdata, no goroutines, no clock.

// maxSum is where a sum saturates: the most a float64 holds exactly, which
// is what the metrics SDK and Prometheus read counters as.
const maxSum = int64(1) << 53

// series is one attribute set of a metric and its cumulative sum.
type series struct {
	values []string // in the order of the metric's attributes; nil for the overflow series
	sum    int64
	dirty  bool // grew, or its last send was refused, since it was last sent
}

// table holds one metric's series: at most max attribute sets, then one
// overflow series that takes every other record, so that the metric's
// total stays exact whatever the cardinality.
type table struct {
	max      int
	byKey    map[string]*series
	overflow *series
	dirty    []*series // in the order they became dirty
	keyBuf   []byte
}

func newTable(maxSeries int) *table {
	return &table{max: maxSeries, byKey: map[string]*series{}}
}

// add sums n into the series of values (not retained); it reports whether
// the overflow series took it.
func (t *table) add(values []string, n int64) (overflowed bool) {
	t.keyBuf = t.keyBuf[:0]
	for _, v := range values { // length-prefixed: no two value lists share a key
		t.keyBuf = strconv.AppendInt(t.keyBuf, int64(len(v)), 10)
		t.keyBuf = append(t.keyBuf, ':')
		t.keyBuf = append(t.keyBuf, v...)
	}
	s, ok := t.byKey[string(t.keyBuf)]
	if !ok {
		if len(t.byKey) >= t.max {
			if t.overflow == nil {
				t.overflow = &series{}
			}
			s, overflowed = t.overflow, true
		} else {
			s = &series{values: cloneAll(values)}
			t.byKey[string(t.keyBuf)] = s
		}
	}
	s.sum = min(s.sum+n, maxSum) // n ≤ maxSum: no wrap
	t.markDirty(s)
	return overflowed
}

func (t *table) markDirty(s *series) {
	if !s.dirty {
		s.dirty = true
		t.dirty = append(t.dirty, s)
	}
}

// takeDirty returns the series to send and marks them sent.
func (t *table) takeDirty() []*series {
	out := t.dirty
	for _, s := range out {
		s.dirty = false
	}
	t.dirty = nil
	return out
}

// refused marks series taken by takeDirty to be sent again.
func (t *table) refused(ss []*series) {
	for _, s := range ss {
		t.markDirty(s)
	}
}

func cloneAll(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strings.Clone(v)
	}
	return out
}

// wholeNumber reads a source attribute's value as a count: an integer of
// zero or more, given as an int, a whole double or a decimal string. ok is
// false for anything else (a counter never goes down).
func wholeNumber(i int64, f float64, s string, kind valueKind) (n int64, ok bool) {
	switch kind {
	case kindInt:
		n, ok = i, true
	case kindDouble:
		if f == math.Trunc(f) && f >= 0 && f <= float64(maxSum) {
			n, ok = int64(f), true
		}
	case kindString:
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		n, ok = v, err == nil
	}
	if !ok || n < 0 {
		return 0, false
	}
	return min(n, maxSum), true
}

type valueKind int

const (
	kindOther valueKind = iota
	kindInt
	kindDouble
	kindString
)
