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

// The packing is the one snapshots hold and names are made of: every
// field through field.of, length prefixed, key fields first; check accepts
// it, and unpack gives back every field.
func TestPackingRoundTrips(t *testing.T) {
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
			var back k8sevent.Event
			l.unpack(packed, &back)
			for f := fType; f <= lastField; f++ {
				require.Equal(t, *f.of(&ev), *f.of(&back), "field %d of layout %c", f, l.tag)
			}
			_, ok = l.check(packed[:len(packed)-1])
			require.False(t, ok, "a packing cut short")
		}
	}
}
