package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
)

// TestBaselinesOfTheDemoStorms: for the storms make run replays, the
// baseline counts every occurrence once, and its count errors are what the
// recorders' final counts say: at least the difference of the sums, and 0
// only when every pair's count is exact. client-go's legacy recorder
// loses occurrences of the crash loop and the CronJob (its spam filter).
func TestBaselinesOfTheDemoStorms(t *testing.T) {
	scs, err := loadScenarios(strings.Split(defaultScenarios, ","), 30*time.Minute, 0, perScenario)
	require.NoError(t, err)
	base := baselines(scs)
	require.Len(t, base, len(scs))
	for _, sc := range scs {
		b := base[sc.Name]
		t.Logf("%-16s occ %5d | tools/record %5d writes, error %4d, unseen %3d | tools/events %5d writes, error %4d, unseen %3d",
			sc.Name, len(sc.Occs), b.Record.Writes, b.Record.CountErr, b.Record.Unseen, b.Events.Writes, b.Events.CountErr, b.Events.Unseen)
		assert.Equal(t, int64(len(sc.Occs)), b.sum(), "%s: every occurrence counted once", sc.Name)
		legacy, series := recordermodel.Legacy(sc.Occs), recordermodel.Series(sc.Occs)
		for name, c := range map[string]struct {
			cost  recorderCost
			tally *recordermodel.Tally
		}{"tools/record": {b.Record, legacy}, "tools/events": {b.Events, series}} {
			var written int64
			for _, n := range c.tally.Counts() {
				written += n
			}
			assert.Equal(t, int64(c.tally.Writes), c.cost.Writes, "%s, %s", sc.Name, name)
			assert.Positive(t, c.cost.Writes, "%s, %s", sc.Name, name)
			assert.GreaterOrEqual(t, c.cost.CountErr, max(written-b.sum(), b.sum()-written), "%s, %s: error below the difference of the sums", sc.Name, name)
			assert.Equal(t, c.cost.CountErr == 0, maps.Equal(b.Truth, c.tally.Counts()), "%s, %s: error 0 iff exact per pair", sc.Name, name)
		}
	}
	assert.Positive(t, base["crashloop"].Record.CountErr, "tools/record's spam filter drops crash-loop occurrences")
	assert.Positive(t, base["cronjob"].Record.CountErr, "the CronJob case: tools/record loses SawCompletedJob occurrences")
}
