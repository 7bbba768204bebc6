package engine

import "math/bits"

// forgotten remembers which objects the totals cache forgot, in two
// generations of a Bloom filter, so that an object seen for the first time
// after the cache overflowed (an `initial: all` list of more Events than
// max_keys, in name order) is still known to be new. A filter answers
// "maybe forgotten" for every forgotten object and, rarely, for a new one
// (then the object is counted as possibly forgotten: at most 1, never
// more than happened). A generation takes filterLoad × max_keys objects
// (about 0.2% false positives over both when full); then the older one is
// dropped and its objects go into the horizon: they are known only by
// their times.
//
// The filter is blocked: an object's filterHashes bits are one in each
// word of one block of filterHashes words (64 bytes), so that adding
// or testing one costs one block's reads and no loop of probes over the
// whole filter (a new uid per record forgets one per record). At 16 bits
// per object its false positives are ~0.09% per full generation (measured,
// 2 million probes), where 8 probes anywhere in it (before snapshot
// version 6) gave ~0.06%: a few more new objects counted as possibly
// forgotten, once the cache overflowed, for ~70 instructions per object
// added instead of ~190.
type forgotten struct {
	gens [2]generation // [0] is filled, [1] is the previous one
	n    int           // objects put into gens[0]
}

type generation struct {
	bits  []uint64 // blocks of filterHashes words
	any   bool     // an object went into it
	first int64    // the latest stated first occurrence among them (unknownTime: none)
}

const (
	filterLoad   = 4 // objects per generation, per max_keys
	filterBits   = 64 / filterLoad
	filterHashes = 8 // bits per object, one per word of its block
)

func newForgotten(maxKeys int) forgotten {
	words := (maxKeys*filterBits*filterLoad/64 + filterHashes - 1) / filterHashes * filterHashes
	var f forgotten
	for i := range f.gens {
		f.gens[i] = generation{bits: make([]uint64, words), first: unknownTime}
	}
	return f
}

// add puts an object in; when the generation is full the previous one goes
// into h, the horizon of objects known only by their times.
func (f *forgotten) add(key uint64, first int64, h *horizon) {
	if f.n >= len(f.gens[0].bits)*64/filterBits {
		h.age(&f.gens[1])
		f.gens[0], f.gens[1] = f.gens[1], f.gens[0]
		f.n = 0
	}
	g := &f.gens[0]
	h1, h2 := probeHashes(key)
	b := g.block(h1)
	// Unrolled: a loop cost twice as many instructions.
	b[0] |= 1 << (h2 & 63)
	b[1] |= 1 << (h2 >> 6 & 63)
	b[2] |= 1 << (h2 >> 12 & 63)
	b[3] |= 1 << (h2 >> 18 & 63)
	b[4] |= 1 << (h2 >> 24 & 63)
	b[5] |= 1 << (h2 >> 30 & 63)
	b[6] |= 1 << (h2 >> 36 & 63)
	b[7] |= 1 << (h2 >> 42 & 63)
	g.any = true
	g.first = max(g.first, first)
	f.n++
}

// has reports whether the object may have been put in.
func (f *forgotten) has(key uint64) bool {
	h1, h2 := probeHashes(key)
	for gi := range f.gens {
		if g := &f.gens[gi]; g.any && g.has(h1, h2) {
			return true
		}
	}
	return false
}

// has reports whether g holds every bit of an object (h1, h2: see
// probeHashes): bit (h2 >> 6i) & 63 of word i of its block, for i < 8.
func (g *generation) has(h1, h2 uint64) bool {
	b := g.block(h1)
	return b[0]>>(h2&63)&(b[1]>>(h2>>6&63))&(b[2]>>(h2>>12&63))&(b[3]>>(h2>>18&63))&
		(b[4]>>(h2>>24&63))&(b[5]>>(h2>>30&63))&(b[6]>>(h2>>36&63))&(b[7]>>(h2>>42&63))&1 != 0
}

// block is the block of an object whose first probe hash is h1: h1 scaled
// to the number of blocks (no division, any number).
func (g *generation) block(h1 uint64) *[filterHashes]uint64 {
	i, _ := bits.Mul64(h1, uint64(len(g.bits)/filterHashes))
	return (*[filterHashes]uint64)(g.bits[i*filterHashes:])
}

// age moves g's objects into the horizon and empties g.
func (h *horizon) age(g *generation) {
	if g.any {
		h.any = true
		h.first = max(h.first, g.first)
	}
	clear(g.bits)
	g.any, g.first = false, unknownTime
}

// probeHashes mixes (splitmix64) an object's hash into two: one picks
// the block, the other the bit of each word.
func probeHashes(key uint64) (h1, h2 uint64) {
	return mix64(key), mix64(key ^ 0x9e3779b97f4a7c15)
}
