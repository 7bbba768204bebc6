package collectorproc

// The names of this project's components' own metrics as the collector's
// Prometheus endpoint writes them (bin/otelcol-k8sevents, collector
// v0.161): counters without a _total suffix.
const (
	receiverMetric  = "otelcol_receiver_k8sevents_"
	processorMetric = "otelcol_processor_eventseries_"
	exporterMetric  = "otelcol_exporter_k8sevents_"
)

// Pipeline is what the three components counted, read from one scrape: the
// one reader of their metrics for the end-to-end tests and make run.
type Pipeline struct {
	Received    float64 // Events the receiver got: watch ADDED and MODIFIED, and listed
	Occurrences float64 // occurrences the processor counted
	RecordsOut  float64 // records it emitted (records, filter passed or exempt)
	Compressed  float64 // occurrences folded into a series without a record
	Suppressed  float64 // records the spam filter held back (records, filter held)
	Finished    float64 // series that ended
	Open        float64 // series (and singletons) still in the processor's cache
	// Writes are the creates and patches the API server accepted: every
	// outcome but stale, unchanged and adopted, which send no write.
	Writes float64
	// Stale are records the exporter skipped because a later record of
	// their object had been written first (pushes that ran at once).
	Stale float64
	// Done is every record the exporter finished with: written, skipped or
	// refused for good.
	Done              float64
	PermanentFailures float64
	RetryableFailures float64
}

// Pipeline reads the components' metrics.
func (m Metrics) Pipeline() Pipeline {
	recv := receiverMetric + "events_received"
	writes := exporterMetric + "writes"
	records := processorMetric + "records"
	p := Pipeline{
		Received:          m.Sum(recv, "type=added") + m.Sum(recv, "type=modified") + m.Sum(recv, "type=listed"),
		Occurrences:       m.Sum(processorMetric + "occurrences"),
		RecordsOut:        m.Sum(records, "filter=passed") + m.Sum(records, "filter=exempt"),
		Compressed:        m.Sum(processorMetric+"merged_occurrences", "into=series"),
		Suppressed:        m.Sum(records, "filter=held"),
		Finished:          m.Sum(processorMetric+"series", "event=finished"),
		Open:              m.Sum(processorMetric + "open_entries"),
		Writes:            m.Sum(writes),
		Stale:             m.Sum(writes, "outcome=stale"),
		PermanentFailures: m.Sum(exporterMetric + "permanent_failures"),
		RetryableFailures: m.Sum(exporterMetric + "retryable_failures"),
	}
	p.Done = p.Writes + p.PermanentFailures
	for _, o := range []string{"stale", "unchanged", "adopted"} {
		p.Writes -= m.Sum(writes, "outcome="+o)
	}
	return p
}
