package ratelog

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOncePerIntervalPerKind(t *testing.T) {
	l := New[string](time.Minute)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	assert.True(t, l.Allow("a", t0))
	assert.False(t, l.Allow("a", t0.Add(59*time.Second)))
	assert.True(t, l.Allow("b", t0.Add(time.Second)), "kinds are apart")
	assert.True(t, l.Allow("a", t0.Add(time.Minute)))
}

// TestKindsRememberedAreBounded: kinds taken from input (namespaces) do not
// grow the limiter past MaxKinds; the one logged least recently is
// forgotten and may log again.
func TestKindsRememberedAreBounded(t *testing.T) {
	l := New[string](time.Minute)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	assert.True(t, l.Allow("first", t0))
	for i := range MaxKinds {
		assert.True(t, l.Allow(fmt.Sprintf("ns-%d", i), t0))
	}
	assert.Equal(t, MaxKinds, l.Len(), "bounded")
	assert.True(t, l.Allow("first", t0.Add(time.Second)), "forgotten: logged again")
	assert.False(t, l.Allow(fmt.Sprintf("ns-%d", MaxKinds-1), t0.Add(time.Second)), "a recent kind is remembered")
}
