package eventseriesprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

// TestStateOfAnotherVersionIsRefused: a saved state whose snapshot
// version is not this build's (an upgrade across versions) is refused
// with a warning naming both versions and counted in
// state{restore,version_refused}, not as an error; the processor starts empty
// (the watched Event's next record counts its whole count, as the README
// says) and saves a state of its own version, which the next start
// restores.
func TestStateOfAnotherVersionIsRefused(t *testing.T) {
	dir := t.TempDir()
	h, stop := fileStorage(t, dir)
	r := startRun(t, h, nil)
	r.feed(t, watched(), time.Now(), 1, 2)
	require.NoError(t, r.p.Shutdown(context.Background()))
	client, err := h[storageID].(storage.Extension).GetClient(context.Background(), component.KindProcessor,
		component.NewID(metadata.Type), "")
	require.NoError(t, err)
	b, err := client.Get(context.Background(), savedKey)
	require.NoError(t, err)
	st, err := decodeSaved(b)
	require.NoError(t, err)
	at := 1 + int(st.Engine[0]) // the version follows the magic string (a length byte, its bytes)
	st.Engine[at]++
	b, err = st.encode()
	require.NoError(t, err)
	require.NoError(t, client.Set(context.Background(), savedKey, b))
	require.NoError(t, client.Close(context.Background()))

	cfg := createDefaultConfig()
	id := storageID
	cfg.Storage = &id
	tel := componenttest.NewTelemetry()
	defer func() { _ = tel.Shutdown(context.Background()) }()
	set := metadatatest.NewSettings(tel)
	core, logs := observer.New(zapcore.InfoLevel)
	set.Logger = zap.New(core)
	sink := &faultSink{}
	p, err := newProcessor(set, cfg, sink, time.Now)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), h))
	(&run{p: p, sink: sink, tel: tel}).feed(t, watched(), time.Now(), 3)
	require.NoError(t, p.Shutdown(context.Background()))

	refused := logs.FilterMessageSnippet("Saved state of another snapshot version discarded").All()
	require.Len(t, refused, 1)
	assert.Equal(t, zapcore.WarnLevel, refused[0].Level)
	assert.Contains(t, refused[0].ContextMap()["error"], "this build reads version")
	assert.Equal(t, map[string]int64{"operation=restore,outcome=version_refused": 1},
		counterPoints(tel, "otelcol_processor_eventseries_state", "outcome=version_refused"))
	assert.Empty(t, counterPoints(tel, "otelcol_processor_eventseries_state", "outcome=error"), "an upgrade is not a state error")
	assert.Equal(t, int64(3), sum(seriesWritten(t, sink)), "started empty: the watched Event's whole count")

	again := startRun(t, h, nil)
	again.feed(t, watched(), time.Now(), 4)
	require.NoError(t, again.p.Shutdown(context.Background()))
	assert.Equal(t, int64(1), again.p.engine.Stats.Occurrences, "this build's state restored: 3 to 4 is one occurrence")
	stop()
}

// TestModeChangeKeepsEveryCount: a collector killed in one mode and
// started in the other (or with the other series key) keeps every count:
// what the state held back is written in the mode it was counted in, and
// the watched Event's next records count only their growth. Summed over
// the objects written in both runs, the last counts are the watched
// Event's final count.
func TestModeChangeKeepsEveryCount(t *testing.T) {
	for _, c := range []struct{ name, from, to string }{
		{"series to legacy", modeSeries, modeLegacy},
		{"legacy to series", modeLegacy, modeSeries},
		{"series key", modeSeries, modeSeries},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, stop := fileStorage(t, t.TempDir())
			defer stop()
			first := startRun(t, h, func(cfg *Config) { cfg.Mode = c.from })
			first.feed(t, watched(), time.Now(), 1, 2, 3, 5)
			require.NoError(t, first.p.save(context.Background()))
			first.feed(t, watched(), time.Now(), 6) // logged only: the next start replays it
			crash(t, first.p)

			core, logs := observer.New(zapcore.WarnLevel)
			second := newRun(t, func(cfg *Config) {
				cfg.Mode = c.to
				if c.from == c.to {
					cfg.Series.KeyIgnoresResourceVersion = !cfg.Series.KeyIgnoresResourceVersion
				}
			})
			second.p.logger = zap.New(core)
			require.NoError(t, second.p.Start(context.Background(), h))
			second.feed(t, watched(), time.Now(), 7, 9)
			require.NoError(t, second.p.Shutdown(context.Background()))

			assert.Equal(t, int64(9), sum(finalCounts(collect(t, first.sink, second.sink))), "every occurrence once, across the change")
			assert.Len(t, logs.FilterMessageSnippet("Saved state made under other settings").All(), 1)
			// The replay (6) counts in the saved state's engine, 7 and 9 in
			// the configured one: its metrics start from its own zero.
			assert.Equal(t, int64(4), counterSum(second.tel, "otelcol_processor_eventseries_occurrences"), "occurrences the second run counted")
		})
	}
}
