package engine

// The bytes of a snapshot's header and of a version 8 snapshot: writer
// appends varints, length-prefixed strings and flag bytes; reader reads
// them back and remembers the first failure.

import (
	"encoding/binary"
	"fmt"
)

type writer struct{ b []byte }

func (w *writer) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

func (w *writer) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *writer) flags(bits ...bool) {
	var f byte
	for i, b := range bits {
		if b {
			f |= 1 << i
		}
	}
	w.b = append(w.b, f)
}

// reader reads a snapshot; after the first error every read is zero and
// err says where it went wrong.
type reader struct {
	b    []byte
	size int
	err  error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d of %d", what, r.size-len(r.b), r.size)
	}
	r.b = nil
}

func (r *reader) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated or malformed")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("truncated or malformed")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) str() string {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.fail("truncated string")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// entries reads a count of at most limit; 0 after an error.
func (r *reader) entries(limit int, what string) int {
	n := r.uint()
	if r.err == nil && n > uint64(limit) {
		r.fail(fmt.Sprintf("%d %s, over the limit of %d,", n, what, limit))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}
