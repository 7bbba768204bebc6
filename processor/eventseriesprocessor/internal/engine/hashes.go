package engine

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// objectHash is what the totals cache and the filter of forgotten objects
// know an Event object by (see totals): its key ('U' and its uid, or
// 'N', its namespace and name), then its cluster's name when known (not
// its uid: see clusterFields), each part
// length-prefixed, hashed 8 bytes at a time. Fixed, not seeded: snapshots
// keep it, and a crafted collision gains nothing sending the other
// object's key would not (see totalTable). Keys of equal parts' lengths
// differing anywhere never share it: every step is a bijection of the
// state for a given input word. ok is false for a record that names no
// Event object.
func objectHash(ev *k8sevent.Event) (h uint64, ok bool) {
	switch {
	case ev.UID != "":
		h = hashPart(objectSeed^'U', ev.UID)
	case ev.Name != "" && (ev.Count > 0 || ev.SeriesCount > 0):
		h = hashPart(hashPart(objectSeed^'N', ev.ObjectNamespace()), ev.Name)
	default:
		return 0, false
	}
	if ev.Cluster.Name != "" {
		h = hashPart(h^objectCluster, ev.Cluster.Name)
	}
	return h, true
}

const (
	objectSeed    = 0x243f6a8885a308d3 // any fixed value: snapshots hold the hashes
	objectCluster = 0x13198a2e03707344
	hashMul1      = 0x9e3779b97f4a7c15
	hashMul2      = 0xc2b2ae3d27d4eb4f
)

// hashPart continues h over s: its length, then its bytes, 8 at a time
// (the last word read overlapping, its length being hashed already).
func hashPart(h uint64, s string) uint64 {
	n := len(s)
	h = (h ^ uint64(n)) * hashMul1
	b := unsafe.Slice(unsafe.StringData(s), n)
	for ; len(b) >= 8; b = b[8:] {
		h = bits.RotateLeft64((h^binary.LittleEndian.Uint64(b))*hashMul2, 31) * hashMul1
	}
	var w uint64
	switch k := len(b); {
	case k >= 4:
		w = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[k-4:]))<<32
	case k > 0:
		w = uint64(b[0]) | uint64(b[k/2])<<8 | uint64(b[k-1])<<16
	default:
		return h
	}
	return bits.RotateLeft64((h^w)*hashMul2, 31) * hashMul1
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
