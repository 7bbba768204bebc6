package eventseriesprocessor

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestHostileDuplicateKeys: a record whose attribute maps hold a contract
// key twice (allowed by OTLP) cannot make the processor's output say
// another count or another Event name than the processor decided: every
// record it emits carries each contract key once, on the record and on the
// resource, and the duplicate is counted as bad input.
func TestHostileDuplicateKeys(t *testing.T) {
	raw, err := os.ReadFile("../../internal/k8sevent/testdata/duplicated-keys.json")
	require.NoError(t, err)
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(raw)
	require.NoError(t, err)

	h := newHarness(t, eventTime)
	h.consume(ld)
	h.shutdown()

	out := h.records()
	require.NotEmpty(t, out)
	for _, r := range out {
		requireEachContractKeyOnce(t, r.lr.Attributes())
		requireEachContractKeyOnce(t, r.res.Attributes())
		ev := r.event(t)
		require.NotEqual(t, "other-object.event", ev.Name, "the name the processor gave")
		require.LessOrEqual(t, max(ev.Count, ev.SeriesCount), int64(1), "one occurrence was sent")
	}
	requireProblemCounted(t, h, "duplicate_key")
}

func requireEachContractKeyOnce(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	seen := map[string]bool{}
	for k := range attrs.All() {
		for _, c := range k8sevent.ContractKeys {
			if k == c {
				require.False(t, seen[k], "key %s twice", k)
				seen[k] = true
			}
		}
	}
}

// requireProblemCounted: the invalid_records metric has a point for problem.
func requireProblemCounted(t *testing.T, h *harness, problem string) {
	t.Helper()
	m, err := h.tel.GetMetric("otelcol_processor_eventseries_invalid_records")
	require.NoError(t, err)
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if p, _ := dp.Attributes.Value("problem"); p.AsString() == problem && dp.Value > 0 {
			return
		}
	}
	t.Fatalf("no invalid_records point for problem %q", problem)
}
