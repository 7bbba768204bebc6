package engine

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// objectHash is what the totals cache and the filter of forgotten objects
// know an Event object by (see totalTable): its key ('U' and its uid, or
// 'N', its namespace and name), then its cluster when known, each part
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
	if c := ev.Cluster; c != (k8sevent.Cluster{}) {
		h = hashPart(hashPart(h^objectCluster, c.Name), c.UID)
	}
	return h, true
}

const (
	objectSeed    = 0x243f6a8885a308d3 // any fixed value: what snapshots since version 6 hold
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

// fnvObjectHash is what snapshots before version 6 knew an object by: the
// 64-bit FNV-1a hash of 'U' uid, or of 'N' namespace/name, then of the
// cluster when known. A restored older snapshot's totals keep it until
// their object comes back (see Engine.oldTotals).
func fnvObjectHash(ev *k8sevent.Event) uint64 {
	var h uint64
	if ev.UID != "" {
		h = fnvAdd(fnvAdd(fnvOffset, "U"), ev.UID)
	} else {
		h = fnvAdd(fnvAdd(fnvAdd(fnvAdd(fnvOffset, "N"), ev.ObjectNamespace()), "/"), ev.Name)
	}
	if c := ev.Cluster; c != (k8sevent.Cluster{}) {
		h = fnvAdd(fnvAdd(fnvAdd(fnvAdd(h, "\x00C"), c.Name), "\x00"), c.UID)
	}
	return h
}

// fnvKeyHash is the FNV-1a hash of a key as snapshot versions 1 to 3 held it.
func fnvKeyHash(key string) uint64 { return fnvAdd(fnvOffset, key) }

const fnvOffset = 14695981039346656037

// fnvAdd continues an FNV-1a hash over s.
func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
