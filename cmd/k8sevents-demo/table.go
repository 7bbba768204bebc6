package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// ratio is how many times fewer writes the pipeline made.
func ratio(raw, pipeline int64) string {
	if pipeline == 0 {
		if raw == 0 {
			return "-"
		}
		return "all saved"
	}
	return fmt.Sprintf("%.1fx", float64(raw)/float64(pipeline))
}

func countCheck(r row) string {
	switch {
	case !r.Storm:
		return "n/a (not replayed by the demo)"
	case r.exact():
		return fmt.Sprintf("ok (%d = %d)", r.Counted, r.Occurrences)
	case r.Counted != r.Occurrences:
		return fmt.Sprintf("MISMATCH (counts sum to %d, %d sent)", r.Counted, r.Occurrences)
	default:
		return fmt.Sprintf("MISMATCH (counts sum to %d = %d sent, but %d are on the wrong (object, reason), %d pairs unseen)",
			r.Counted, r.Occurrences, r.CountErr, r.Unseen)
	}
}

// countErr prints a count error, with the pairs that have no Event at all.
func countErr(c recorderCost) string {
	if c.Unseen > 0 {
		return fmt.Sprintf("%d (%d unseen)", c.CountErr, c.Unseen)
	}
	return fmt.Sprint(c.CountErr)
}

// tableHeader is the table's two header lines: who wrote, then what.
const tableHeader = "\t\tRAW\tTOOLS/RECORD\t\tTOOLS/EVENTS\t\tPIPELINE\t\t\t\t\n" +
	"%s\tOCCURRENCES\tWRITES\tWRITES\tCOUNT ERROR\tWRITES\tCOUNT ERROR\tWRITES\tCOUNT ERROR\tFEWER\tEVENT OBJECTS\t\n"

// formatTable prints the before/after table with a total line: per
// scenario, the raw writes (one per occurrence), what client-go's two
// recorders would have written for the same occurrences and their count
// errors, and the pipeline's writes and count error.
func formatTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "SCENARIO"
	for _, r := range rows {
		if !r.Storm {
			head = "SCENARIO/NAMESPACE"
		}
	}
	fmt.Fprintf(tw, tableHeader, head)
	var tot row
	for _, r := range rows {
		rec, evs, ours := "-", "-", "-"
		recW, evsW := "-", "-"
		if r.Storm {
			recW, rec = fmt.Sprint(r.Record.Writes), countErr(r.Record)
			evsW, evs = fmt.Sprint(r.Events.Writes), countErr(r.Events)
			ours = countErr(recorderCost{CountErr: r.CountErr, Unseen: r.Unseen})
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t\n", r.Group, r.Occurrences, r.RawWrites,
			recW, rec, evsW, evs, r.Writes, ours, ratio(r.RawWrites, r.Writes), r.Objects)
		tot.Occurrences += r.Occurrences
		tot.RawWrites += r.RawWrites
		tot.Writes += r.Writes
		tot.Objects += r.Objects
		tot.Record = sumCost(tot.Record, r.Record)
		tot.Events = sumCost(tot.Events, r.Events)
		tot.CountErr += r.CountErr
		tot.Unseen += r.Unseen
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%s\t%d\t%s\t%d\t%s\t%s\t%d\t\n", tot.Occurrences, tot.RawWrites,
		tot.Record.Writes, countErr(tot.Record), tot.Events.Writes, countErr(tot.Events),
		tot.Writes, countErr(recorderCost{CountErr: tot.CountErr, Unseen: tot.Unseen}), ratio(tot.RawWrites, tot.Writes), tot.Objects)
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "RAW: an emitter without compression, one create or count patch per occurrence (what the demo sent).")
	fmt.Fprintln(w, "TOOLS/RECORD: client-go's legacy recorder, its own EventCorrelator (aggregation, spam filter, compression)")
	fmt.Fprintln(w, "run in-process on the same occurrences in storm time. TOOLS/EVENTS: client-go's events.k8s.io series")
	fmt.Fprintln(w, "recorder (a model of its broadcaster: its clock is wall time). COUNT ERROR: occurrences lost or misstated,")
	fmt.Fprintln(w, "the sum over (object, reason) of |final count of its Events - occurrences|; (n unseen): pairs with no Event")
	fmt.Fprintln(w, "at all. FEWER: RAW / PIPELINE writes.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exact counts (sum of the output's counts = occurrences sent, pair by pair):")
	for _, r := range rows {
		fmt.Fprintf(w, "  %-18s %s\n", r.Group, countCheck(r))
	}
}

func sumCost(a, b recorderCost) recorderCost {
	return recorderCost{Writes: a.Writes + b.Writes, CountErr: a.CountErr + b.CountErr, Unseen: a.Unseen + b.Unseen}
}
