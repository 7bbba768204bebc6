package k8seventsreceiver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// memCheckpoints is a checkpoint store in memory that records every write.
type memCheckpoints struct {
	saved []string // the resourceVersion of each checkpoint written, in order
	fail  bool
}

func (m *memCheckpoints) Get(context.Context, string) ([]byte, error) { return nil, nil }

func (m *memCheckpoints) Set(_ context.Context, _ string, b []byte) error {
	if m.fail {
		return errors.New("storage refused the write")
	}
	r := newCheckpoint(recentSize)
	if err := r.unmarshal(b); err != nil {
		return err
	}
	m.saved = append(m.saved, r.ResourceVersion)
	return nil
}

// delayedWatcher is a watcher with checkpoint_delay and a clock the test moves.
func delayedWatcher(delay time.Duration, store checkpointStore, now *time.Time) *watcher {
	cfg := createDefaultConfig()
	cfg.CheckpointDelay = delay
	return &watcher{cfg: cfg, store: store, logger: zap.NewNop(), checkpoint: newCheckpoint(recentSize),
		clock: func() time.Time { return *now }}
}

// TestCheckpointDelaySavesAStateThatOld: while the watch runs, every
// checkpoint written is a state at least checkpoint_delay old (and the
// newest such one); the one written when the watch stops is the state then.
// A crash therefore resumes at least checkpoint_delay back: it emits again,
// never skips, what a downstream state saved on its own timer may lack.
func TestCheckpointDelaySavesAStateThatOld(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start
	store := &memCheckpoints{}
	w := delayedWatcher(10*time.Second, store, &now)
	rvAt := map[string]time.Time{}
	// A version every 250 ms (faster than the saves), a save after each.
	for i := 0; i < 160; i++ { // 40 s
		now = start.Add(time.Duration(i) * 250 * time.Millisecond)
		rv := now.Format("150405.000")
		w.checkpoint.ResourceVersion, rvAt[rv] = rv, now
		saved := len(store.saved)
		w.save(context.Background())
		if len(store.saved) > saved && saved > 0 {
			age := now.Sub(rvAt[store.saved[len(store.saved)-1]])
			assert.GreaterOrEqual(t, age, 10*time.Second, "a checkpoint written at %v", now.Sub(start))
			assert.Less(t, age, 11*time.Second, "the newest state old enough, at %v", now.Sub(start))
		}
		assert.LessOrEqual(t, len(w.trail), 11, "states kept: about one a second over the delay")
	}
	require.NotEmpty(t, store.saved)
	assert.Equal(t, start.Format("150405.000"), store.saved[0], "no checkpoint yet: the first state is written at once")

	w.persist(context.Background(), true)
	assert.Equal(t, now.Format("150405.000"), store.saved[len(store.saved)-1], "stopping saves the state now")
}

// TestCheckpointDelayZeroSavesNow: without checkpoint_delay (the default)
// every save writes the state now, as before.
func TestCheckpointDelayZeroSavesNow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	store := &memCheckpoints{}
	w := delayedWatcher(0, store, &now)
	w.stored = true
	for _, rv := range []string{"1", "2", "3"} {
		w.checkpoint.ResourceVersion = rv
		w.save(context.Background())
	}
	assert.Equal(t, []string{"1", "2", "3"}, store.saved)
	assert.Empty(t, w.trail)
}

// TestCheckpointDelayFailedWriteIsLoggedAndLater: a write the storage
// refuses is logged and the next one writes a state that old again (the
// checkpoint only ever moves to states at least the delay old).
func TestCheckpointDelayFailedWriteIsLoggedAndLater(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start
	store := &memCheckpoints{fail: true}
	w := delayedWatcher(2*time.Second, store, &now)
	w.stored = true // a checkpoint was loaded
	for i := 0; i <= 8; i++ {
		now = start.Add(time.Duration(i) * time.Second)
		w.checkpoint.ResourceVersion = now.Format("150405")
		if i == 5 {
			store.fail = false
		}
		w.save(context.Background())
	}
	require.NotEmpty(t, store.saved)
	for _, rv := range store.saved {
		at, err := time.Parse("150405", rv)
		require.NoError(t, err)
		assert.LessOrEqual(t, at.Add(2*time.Second).Format("150405"), now.Format("150405"))
	}
	assert.Equal(t, start.Add(6*time.Second).Format("150405"), store.saved[len(store.saved)-1])
}

func TestConfigValidateCheckpointDelay(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.CheckpointDelay = -time.Second
	assert.ErrorContains(t, cfg.Validate(), "checkpoint_delay")
	cfg.CheckpointDelay = 10 * time.Second
	assert.NoError(t, cfg.Validate())
}
