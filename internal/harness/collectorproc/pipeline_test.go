package collectorproc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPipelineReadsTheBinarysNames reads a scrape spelled as
// bin/otelcol-k8sevents spells it (TestPipelineOnTheBuiltCollector checks the
// spelling on the binary itself).
func TestPipelineReadsTheBinarysNames(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(`
otelcol_receiver_k8sevents_events_received{type="added"} 10
otelcol_receiver_k8sevents_events_received{type="modified"} 90
otelcol_receiver_k8sevents_events_received{type="bookmark"} 3
otelcol_processor_eventseries_occurrences 100
otelcol_processor_eventseries_records{filter="passed",state="singleton"} 6
otelcol_processor_eventseries_records{filter="exempt",state="singleton"} 1
otelcol_processor_eventseries_records{filter="passed",state="started"} 3
otelcol_processor_eventseries_records{filter="held"} 2
otelcol_processor_eventseries_merged_occurrences{into="series"} 90
otelcol_processor_eventseries_merged_occurrences{into="summary"} 4
otelcol_processor_eventseries_series{event="started"} 3
otelcol_processor_eventseries_series{event="finished"} 1
otelcol_processor_eventseries_series{event="evicted"} 2
otelcol_processor_eventseries_open_entries 9
otelcol_exporter_k8sevents_writes{outcome="created"} 7
otelcol_exporter_k8sevents_writes{outcome="patched"} 3
otelcol_exporter_k8sevents_writes{outcome="stale"} 1
otelcol_exporter_k8sevents_writes{outcome="unchanged"} 5
otelcol_exporter_k8sevents_writes{outcome="adopted"} 2
otelcol_exporter_k8sevents_permanent_failures{reason="invalid"} 1
otelcol_exporter_k8sevents_retryable_failures{reason="throttled"} 4
`))
	require.NoError(t, err)
	assert.Equal(t, Pipeline{
		Received: 100, Occurrences: 100, RecordsOut: 10, Compressed: 90, Suppressed: 2, Finished: 1, Open: 9,
		Writes: 10, Stale: 1, Done: 19, PermanentFailures: 1, RetryableFailures: 4,
	}, m.Pipeline())
}
