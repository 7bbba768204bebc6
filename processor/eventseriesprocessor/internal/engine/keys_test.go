package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// randomEvent sets every field of an Event to a random string: empty,
// short, or long enough for a two-byte length prefix.
func randomEvent(rng *rand.Rand) k8sevent.Event {
	var ev k8sevent.Event
	for f := fType; f <= lastField; f++ {
		switch rng.IntN(4) {
		case 0:
		case 1:
			*f.of(&ev) = strings.Repeat("x", rng.IntN(20))
		case 2:
			*f.of(&ev) = strings.Repeat("y", 0x7f+rng.IntN(3)) // around the one-byte prefix's limit
		default:
			*f.of(&ev) = strings.Repeat("z", rng.IntN(400))
		}
	}
	return ev
}

// The packing is the one snapshots hold: every field through field.of,
// length prefixed, key fields first; a state's note is its packing's.
func TestPackingIsTheSnapshotsAndNotesShareIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	layouts := []*layout{&identicalLayout, &aggregateLayout}
	for _, rv := range []bool{false, true} {
		l := seriesLayout(rv)
		layouts = append(layouts, &l)
	}
	e, err := New(defaults())
	require.NoError(t, err)
	layouts = append(layouts, &e.spamLayout)
	for range 2000 {
		ev := randomEvent(rng)
		for _, l := range layouts {
			want := []byte{l.tag}
			for i, fields := range [2][]field{l.key, l.rest} {
				for _, f := range fields {
					want = append(binary.AppendUvarint(want, uint64(len(*f.of(&ev)))), *f.of(&ev)...)
				}
				if i == 0 {
					require.Equal(t, string(want), string(l.appendKey(nil, &ev)), "key of layout %c", l.tag)
				}
			}
			key := l.appendKey(nil, &ev)
			packed, keyLen := string(l.appendRest(key, &ev)), len(key)
			require.Equal(t, string(want), packed)
			check, ok := l.check(packed)
			require.True(t, ok)
			require.Equal(t, check, keyLen)
			require.Equal(t, ev.Note, l.note(packed, &ev))
			require.Equal(t, l.field(packed, fNote), l.note(packed, &ev), "the note as field finds it")
		}
	}
}

// A key copies every byte of every field, whatever its length: each
// field in turn gets distinct random bytes of every length from 0 to
// 300 (the one-byte prefix's limit and the copies' size classes on both
// sides), the others random short strings, and every layout's key and
// packing are the length-prefixed fields (randomEvent's repeated letters
// would not show a byte copied from the wrong place).
func TestKeyCopiesEveryByteOfEveryLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	text := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	series := seriesLayout(true)
	layouts := []*layout{&identicalLayout, &aggregateLayout, &series}
	for f := fType; f <= lastField; f++ {
		for n := range 301 {
			var ev k8sevent.Event
			for g := fType; g <= lastField; g++ {
				*g.of(&ev) = text(rng.IntN(20))
			}
			*f.of(&ev) = text(n)
			for _, l := range layouts {
				want := []byte{l.tag}
				for _, g := range l.key {
					want = append(binary.AppendUvarint(want, uint64(len(*g.of(&ev)))), *g.of(&ev)...)
				}
				prefix := []byte("kept")
				got := l.appendKey(prefix, &ev)
				require.Equal(t, "kept"+string(want), string(got), "field %d of %d bytes, layout %c", f, n, l.tag)
				for _, g := range l.rest {
					want = append(binary.AppendUvarint(want, uint64(len(*g.of(&ev)))), *g.of(&ev)...)
				}
				packed, keyLen := string(l.appendRest(got[len(prefix):], &ev)), len(got)-len(prefix)
				require.Equal(t, string(want), packed)
				require.Equal(t, len(got)-len(prefix), keyLen)
			}
		}
	}
}
