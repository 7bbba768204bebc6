package ctxwait

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An hour: only the canceled context can end this wait.
	assert.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	assert.ErrorIs(t, Until(ctx, time.Now().Add(time.Hour)), context.Canceled)
	assert.ErrorIs(t, Sleep(ctx, 0), context.Canceled, "nothing to wait, but the context has ended")
}

func TestSleepWaitsItsDuration(t *testing.T) {
	start := time.Now()
	assert.NoError(t, Sleep(context.Background(), 20*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "returned before its time")
	assert.NoError(t, Until(context.Background(), time.Now().Add(-time.Second)), "a time past: no wait, no error")
}
