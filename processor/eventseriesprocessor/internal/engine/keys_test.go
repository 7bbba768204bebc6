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

// Keys are what names are made of: the key fields through field.of,
// length prefixed. A version 8 snapshot's packing is the key, then every
// other field: v8Unpack accepts it and gives back every field, and refuses
// one cut short.
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
			for i, fields := range [2][]field{l.key, v8Rest(l)} {
				for _, f := range fields {
					want = append(binary.AppendUvarint(want, uint64(len(*f.of(&ev)))), *f.of(&ev)...)
				}
				if i == 0 {
					require.Equal(t, string(want), string(l.appendKey(nil, &ev)), "key of layout %c", l.tag)
				}
			}
			packed := string(v8Pack(nil, l, &ev))
			require.Equal(t, string(want), packed)
			var back k8sevent.Event
			require.True(t, v8Unpack(l, packed, &back))
			for f := fType; f <= lastField; f++ {
				require.Equal(t, *f.of(&ev), *f.of(&back), "field %d of layout %c", f, l.tag)
			}
			require.False(t, v8Unpack(l, packed[:len(packed)-1], &back), "a packing cut short")
		}
	}
}

// v8Pack appends ev's version 8 packing in l to buf.
func v8Pack(buf []byte, l *layout, ev *k8sevent.Event) []byte {
	return appendFields(l.appendKey(buf, ev), ev, v8Rest(l))
}
