// Package fuzzbytes hands out a fuzz input piece by piece, for fuzz targets
// that build structured input (records, batches, configs) from raw bytes.
// Past the end of the input every read is zero, so any input is usable.
package fuzzbytes

import "encoding/binary"

// Reader reads a fuzz input front to back.
type Reader struct{ b []byte }

// New reads b.
func New(b []byte) *Reader { return &Reader{b: b} }

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Bytes reads up to n bytes; the slice shares the input.
func (r *Reader) Bytes(n int) []byte {
	n = min(n, len(r.b))
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// U16 reads a little-endian uint16.
func (r *Reader) U16() uint16 {
	var buf [2]byte
	copy(buf[:], r.Bytes(2))
	return binary.LittleEndian.Uint16(buf[:])
}

// U32 reads a little-endian uint32.
func (r *Reader) U32() uint32 {
	var buf [4]byte
	copy(buf[:], r.Bytes(4))
	return binary.LittleEndian.Uint32(buf[:])
}

// U64 reads a little-endian uint64.
func (r *Reader) U64() uint64 {
	var buf [8]byte
	copy(buf[:], r.Bytes(8))
	return binary.LittleEndian.Uint64(buf[:])
}
