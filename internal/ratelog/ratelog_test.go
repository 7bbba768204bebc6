package ratelog

import (
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
