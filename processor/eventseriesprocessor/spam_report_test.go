package eventseriesprocessor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// reportConfig is one row group of the spam-filter report: a mode, and the
// spam key with or without reason.
type reportConfig struct {
	name   string
	mutate func(*Config)
}

var reportConfigs = []reportConfig{
	{"series", func(*Config) {}},
	{"series, key+reason", func(c *Config) { c.SpamFilter.Key = append(c.SpamFilter.Key, "reason") }},
	{"legacy", func(c *Config) { c.Mode = modeLegacy }},
	{"legacy, key+reason", func(c *Config) {
		c.Mode = modeLegacy
		c.SpamFilter.Key = append(c.SpamFilter.Key, "reason")
	}},
}

// replayWith runs a stream through a processor of cfg in event time, 100
// records a batch, shuts it down, and tallies every record it emitted: each
// one is an API write of the Event object it names, with the count it states.
func replayWith(t testing.TB, occs []storm.Occurrence, mutate func(*Config)) *recordermodel.Tally {
	h := newHarness(t, func(cfg *Config) {
		eventTime(cfg)
		mutate(cfg)
	})
	h.feedStorm(occs)
	h.shutdown()
	tally := recordermodel.NewTally()
	for _, r := range h.records() {
		ev := r.event(t)
		count := ev.Count
		switch {
		case ev.SeriesState == k8sevent.StateSingleton:
			count = 1
		case ev.SeriesState != "":
			count = ev.SeriesCount
		}
		tally.Write(ev.Name, recordermodel.Pair{Object: ev.Regarding.Kind + "/" + ev.Regarding.Name, Reason: ev.Reason}, count)
	}
	return tally
}

// TestSpamFilterReport prints, per built-in storm and configuration, the
// records the processor emits next to the writes of client-go's recorders,
// the (object, reason) pairs visible and the count error; and checks the
// goals: count error 0 and every pair visible everywhere; with the default
// spam key, no more records than the better client-go recorder (legacy
// mode: than client-go's legacy recorder).
func TestSpamFilterReport(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("replays every built-in storm four times")
	}
	var report strings.Builder
	fmt.Fprintf(&report, "| storm | config | occurrences | records out | client-go legacy writes | client-go series writes | pairs visible | count error |\n|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, name := range storm.ScenarioNames() {
		occs, err := storm.Scenario(name)
		require.NoError(t, err)
		truth := recordermodel.Truth(occs)
		legacy, series := recordermodel.Legacy(occs), recordermodel.Series(occs)
		for _, rc := range reportConfigs {
			ours := replayWith(t, occs, rc.mutate)
			countErr, invisible := recordermodel.CountError(truth, ours.Counts())
			fmt.Fprintf(&report, "| %s | %s | %d | %d | %d | %d | %d / %d | %d (%.2f%%) |\n", name, rc.name, len(occs),
				ours.Writes, legacy.Writes, series.Writes, len(truth)-invisible, len(truth),
				countErr, 100*float64(countErr)/float64(len(occs)))
			assert.Zero(t, countErr, "%s, %s: count error", name, rc.name)
			assert.Zero(t, invisible, "%s, %s: invisible pairs", name, rc.name)
			switch rc.name {
			case "series":
				assert.LessOrEqual(t, ours.Writes, min(legacy.Writes, series.Writes), "%s, %s: records", name, rc.name)
			case "legacy":
				assert.LessOrEqual(t, ours.Writes, legacy.Writes, "%s, %s: records", name, rc.name)
			}
		}
	}
	t.Log("\n" + report.String())
}
