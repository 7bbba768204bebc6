package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexKeepsAFreePosition: a probe ends at a free position, so an
// index must have one more position than the slots it holds, whatever
// their number. With max_keys 1 the totals index had one position for
// one object, and the lookup of any other object never ended: a config
// Validate accepts hung the pipeline.
func TestIndexKeepsAFreePosition(t *testing.T) {
	for slots := 1; slots <= 100; slots++ {
		x := newIndex(slots)
		require.Greater(t, len(x.at), slots, "slots %d", slots)
	}
}
