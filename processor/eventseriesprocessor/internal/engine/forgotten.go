package engine

// forgotten remembers which objects the totals cache forgot, in two
// generations of a Bloom filter, so that an object seen for the first time
// after the cache overflowed (an `initial: all` list of more Events than
// max_keys, in name order) is still known to be new. A filter answers
// "maybe forgotten" for every forgotten object and, rarely, for a new one
// (then the object is counted as possibly forgotten: at most 1, never
// more than happened). A generation takes filterLoad × max_keys objects
// (about 0.1% false positives over both); then the older one is dropped and
// its objects go into the horizon: they are known only by their times.
type forgotten struct {
	gens [2]generation // [0] is filled, [1] is the previous one
	n    int           // objects put into gens[0]
}

type generation struct {
	bits  []uint64
	any   bool  // an object went into it
	first int64 // the latest stated first occurrence among them (unknownTime: none)
}

const (
	filterLoad   = 4 // objects per generation, per max_keys
	filterBits   = 64 / filterLoad
	filterHashes = 8 // ≈ filterBits × ln 2 (11) would be optimal; 8 costs little and probes less
)

func newForgotten(maxKeys int) forgotten {
	var f forgotten
	for i := range f.gens {
		f.gens[i] = generation{bits: make([]uint64, maxKeys*filterBits*filterLoad/64), first: unknownTime}
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
	m := uint64(len(g.bits) * 64)
	if m&(m-1) == 0 { // max_keys a power of two (the default): a mask, decided once
		for i := range uint64(filterHashes) {
			b := (h1 + i*h2) & (m - 1)
			g.bits[b/64] |= 1 << (b % 64)
		}
	} else {
		for i := range uint64(filterHashes) {
			b := (h1 + i*h2) % m
			g.bits[b/64] |= 1 << (b % 64)
		}
	}
	g.any = true
	g.first = max(g.first, first)
	f.n++
}

// has reports whether the object may have been put in.
func (f *forgotten) has(key uint64) bool {
	h1, h2 := probeHashes(key)
	for gi := range f.gens {
		g := &f.gens[gi]
		if !g.any {
			continue
		}
		if g.has(h1, h2) {
			return true
		}
	}
	return false
}

// has reports whether g holds every bit of an object (h1, h2: see
// probeHashes). Bit i is (h1 + i×h2) mod the bits, a mask where their
// number is a power of two (max_keys is, by default): a division per
// probe was a tenth of a new object's cost.
func (g *generation) has(h1, h2 uint64) bool {
	m := uint64(len(g.bits) * 64)
	if m&(m-1) == 0 {
		for i := range uint64(filterHashes) {
			b := (h1 + i*h2) & (m - 1)
			if g.bits[b/64]&(1<<(b%64)) == 0 {
				return false
			}
		}
		return true
	}
	for i := range uint64(filterHashes) {
		b := (h1 + i*h2) % m
		if g.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
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

// keyHash is the 64-bit FNV-1a hash of an object's key: what the totals
// cache and this filter know the object by. Fixed, not seeded: the output
// stays the same on every run (and in a snapshot), and a crafted collision
// gains nothing sending the other object's key would not (see totalTable).
func keyHash(key string) uint64 { return fnvAdd(fnvOffset, key) }

const fnvOffset = 14695981039346656037

// fnvAdd continues an FNV-1a hash over s: a key is hashed in parts, never built.
func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// probeHashes mixes (splitmix64) a key's hash into two, for double hashing.
func probeHashes(key uint64) (h1, h2 uint64) {
	return mix64(key), mix64(key^0x9e3779b97f4a7c15) | 1
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
