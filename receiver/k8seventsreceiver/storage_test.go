package k8seventsreceiver

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadatatest"
)

var storageID = component.MustNewID("file_storage")

// fileStorage starts the contrib file_storage extension on dir, as a
// collector would at each start.
func fileStorage(t *testing.T, dir string) host {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory, cfg.Compaction.Directory = dir, dir
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return host{storageID: ext}
}

func withStorage(ns string) func(*Config) {
	return func(c *Config) {
		c.API, c.Namespaces = k8sevent.APICoreV1, []string{ns}
		id := storageID
		c.Storage = &id
	}
}

// TestRestartResumesFromCheckpoint: 100 events while the receiver runs,
// 100 while it is stopped, 100 after it started again: exactly 300
// records, each Event once.
func TestRestartResumesFromCheckpoint(t *testing.T) {
	r := newRig(t)
	r.namespace(t, "restart")
	dir := t.TempDir()

	first, sink1 := r.start(t, fileStorage(t, dir), withStorage("restart"))
	watching(t, first)
	r.createEvents(t, "restart", "before", 100)
	waitReceived(t, sink1, 100)
	require.NoError(t, first.Shutdown(context.Background()))

	r.createEvents(t, "restart", "stopped", 100)

	second, sink2 := r.start(t, fileStorage(t, dir), withStorage("restart"))
	watching(t, second)
	r.createEvents(t, "restart", "after", 100)
	waitReceived(t, sink2, 200)

	all := append(settle(t, sink1), settle(t, sink2)...)
	require.Len(t, all, 300)
	seen := map[string]bool{}
	for _, n := range names(all) {
		assert.False(t, seen[n], "%s emitted twice", n)
		seen[n] = true
	}
	assert.Len(t, settle(t, sink1), 100, "before the stop")
}

// TestExpiredResourceVersionRelistsWithoutGapOrDuplicate stops the receiver,
// compacts etcd past its checkpoint, and starts it again: its watch
// gets 410 Gone, it lists, and emits exactly the events it missed.
func TestExpiredResourceVersionRelistsWithoutGapOrDuplicate(t *testing.T) {
	r := newRig(t, kubetest.WithAPIServerFlags("--watch-cache=false"))
	r.namespace(t, "gone")
	dir := t.TempDir()

	first, sink1 := r.start(t, fileStorage(t, dir), withStorage("gone"))
	watching(t, first)
	r.createEvents(t, "gone", "before", 20)
	waitReceived(t, sink1, 20)
	require.NoError(t, first.Shutdown(context.Background()))

	r.createEvents(t, "gone", "missed", 30)
	r.compact(t) // the checkpoint's revision is gone

	second, sink2 := r.start(t, fileStorage(t, dir), withStorage("gone"))
	tel := r.tel
	watching(t, second)
	r.createEvents(t, "gone", "after", 10)
	waitReceived(t, sink2, 40)
	got := settle(t, sink2)
	require.Len(t, got, 40, "the 30 missed and the 10 after, none of the 20 before")
	for _, n := range names(got) {
		assert.NotContains(t, n, "before")
	}
	metadatatest.AssertEqualReceiverK8seventsRelists(t, tel, []metricdata.DataPoint[int64]{{Value: 1}},
		metricdatatest.IgnoreTimestamp())
}
