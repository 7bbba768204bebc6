package eventseriesprocessor

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
)

// testdata/saved/v<N> holds what a build whose snapshot version is N left
// in its storage when it was killed: a snapshot, the write-ahead log after
// it, the resend memory. Every release keeps reading each of them: an
// upgrade must continue exactly where the old build stopped.
var writeSaved = flag.Bool("write-saved", false, "write this build's state to testdata/saved/v<snapshot version>")

// savedKeys are the storage keys a saved state may hold, this build's and
// version 8's (the log's entries are found from the state's LogFrom on).
var savedKeys = append([]string{savedKey}, v8Keys...)

// savedClock is the processing clock of the saved runs: fixed, so that a
// state saved once and a run of today's build agree on every time.
func savedClock(at *time.Time) func() time.Time { return func() time.Time { return *at } }

// runUntilKilled is what the saved states were made of: counts 1 to 3 of a
// watched Event and a series of direct records, a save, count 4 logged
// only, then a kill.
func runUntilKilled(t *testing.T, h host) {
	now := t0.Add(time.Hour)
	r := startRunAt(t, h, nil, savedClock(&now))
	r.feed(t, watched(), t0, 1, 2, 3)
	direct := podEvent("web-2", "Unhealthy", "Readiness probe failed")
	r.feed(t, direct, t0, 0, 0, 0)
	require.NoError(t, r.p.save(context.Background()))
	now = now.Add(time.Minute)
	r.feed(t, watched(), t0.Add(time.Minute), 4)
	crash(t, r.p)
}

// runAfterRestart is the next start: counts 5 and 6, more direct records,
// a graceful stop. It returns the records written.
func runAfterRestart(t *testing.T, h host) delivered {
	now := t0.Add(time.Hour + 2*time.Minute)
	r := startRunAt(t, h, nil, savedClock(&now))
	r.feed(t, watched(), t0.Add(2*time.Minute), 5, 6)
	r.feed(t, podEvent("web-2", "Unhealthy", "Readiness probe failed"), t0.Add(2*time.Minute), 0, 0)
	require.NoError(t, r.p.Shutdown(context.Background()))
	return collect(t, r.sink)
}

// TestSavedStatesOfEveryVersionContinue: for each saved state of
// testdata/saved, a start of this build on it writes exactly what it
// writes after a kill and restart of its own: the same objects, the same
// counts; and leaves this build's saved state in place of the older
// layout. With -write-saved it saves this build's state first.
func TestSavedStatesOfEveryVersionContinue(t *testing.T) {
	if *writeSaved {
		h, stop := fileStorage(t, t.TempDir())
		runUntilKilled(t, h)
		writeSavedState(t, h, filepath.Join("testdata", "saved", fmt.Sprintf("v%d", engine.SnapshotVersion)))
		stop()
	}
	h, stop := fileStorage(t, t.TempDir())
	runUntilKilled(t, h)
	want := runAfterRestart(t, h)
	stop()
	require.NotEmpty(t, want.counts)

	dirs, err := filepath.Glob(filepath.Join("testdata", "saved", "v*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "testdata/saved holds the states of earlier releases")
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			h, stop := fileStorage(t, t.TempDir())
			defer stop()
			readSavedState(t, h, dir)
			got := runAfterRestart(t, h)
			assert.Equal(t, want.counts, got.counts, "counts written per object after the restart")
			assert.Equal(t, want.states, got.states, "series states per object")
			// What the build saves after it is this build's one state:
			// the keys of an older layout are gone.
			client := storageClient(t, h)
			defer func() { require.NoError(t, client.Close(context.Background())) }()
			for _, key := range savedKeys {
				v, err := client.Get(context.Background(), key)
				require.NoError(t, err)
				assert.Equal(t, key == savedKey, v != nil, "key %q after the restart", key)
			}
		})
	}
}

func storageClient(t *testing.T, h host) storage.Client {
	client, err := h[storageID].(storage.Extension).GetClient(context.Background(), component.KindProcessor,
		component.NewID(metadata.Type), "")
	require.NoError(t, err)
	return client
}

func writeSavedState(t *testing.T, h host, dir string) {
	client := storageClient(t, h)
	defer func() { require.NoError(t, client.Close(context.Background())) }()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	keys := append([]string(nil), savedKeys...)
	for n := range uint64(64) {
		keys = append(keys, walKey(n))
	}
	for _, key := range keys {
		v, err := client.Get(context.Background(), key)
		require.NoError(t, err)
		if v != nil {
			require.NoError(t, os.WriteFile(filepath.Join(dir, url.PathEscape(key)), v, 0o644))
		}
	}
}

func readSavedState(t *testing.T, h host, dir string) {
	client := storageClient(t, h)
	defer func() { require.NoError(t, client.Close(context.Background())) }()
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, f := range files {
		key, err := url.PathUnescape(f.Name())
		require.NoError(t, err)
		v, err := os.ReadFile(filepath.Join(dir, f.Name()))
		require.NoError(t, err)
		require.NoError(t, client.Set(context.Background(), key, v))
	}
}

// TestMigrationSurvivesAFailedSaveAndACrash: the save that would replace a
// version-8 state fails (the volume refuses writes), then the collector is
// killed: the next start still finds the version-8 state and its log, and
// writes exactly what a start on it writes.
func TestMigrationSurvivesAFailedSaveAndACrash(t *testing.T) {
	h, stop := fileStorage(t, t.TempDir())
	runUntilKilled(t, h)
	want := runAfterRestart(t, h)
	stop()

	h, stop = fileStorage(t, t.TempDir())
	defer stop()
	readSavedState(t, h, filepath.Join("testdata", "saved", "v8"))
	refusing := &faultStorage{Extension: h[storageID].(storage.Extension)}
	refusing.fail(0, -1) // every batch that writes
	now := t0.Add(time.Hour + 2*time.Minute)
	r := startRunAt(t, host{storageID: refusing}, nil, savedClock(&now))
	require.ErrorIs(t, r.p.save(context.Background()), errDiskFull)
	crash(t, r.p)

	client := storageClient(t, h)
	v, err := client.Get(context.Background(), v8EngineKey)
	require.NoError(t, err)
	require.NotNil(t, v, "the version-8 state is still there")
	require.NoError(t, client.Close(context.Background()))
	got := runAfterRestart(t, h)
	assert.Equal(t, want.counts, got.counts, "counts written per object after the restart")
	assert.Equal(t, want.states, got.states, "series states per object")
}
