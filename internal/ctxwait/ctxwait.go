// Package ctxwait is the one wait in this repository that a context cuts
// short: the receiver's back-off, the storm replay's pacing and the demo's
// pauses. It is shipped code (the receiver imports it), so it imports
// nothing of the harness.
package ctxwait

import (
	"context"
	"time"
)

// Sleep waits d unless ctx ends first. It returns nil after a full wait and
// ctx.Err() when ctx ended (also when d <= 0 and ctx has already ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Until waits until at, as Sleep does.
func Until(ctx context.Context, at time.Time) error {
	return Sleep(ctx, time.Until(at))
}
