package eventseriesprocessor

import (
	"fmt"
	"slices"
	"testing"
)

// The processor's speed and memory budget, as ratios to client-go's
// EventCorrelator measured in the same run on the same occurrences, so
// that they hold on any machine: duplicate-heavy records at least
// dupSpeedup times faster and at most maxDupAllocs allocations per record;
// all-unique churn no slower and at most maxChurnAllocs allocations per
// record (each a new series); at most maxRetained bytes held per open
// series.
const (
	dupSpeedup     = 20
	churnSpeedup   = 1
	maxDupAllocs   = 1
	maxChurnAllocs = 8
	maxRetained    = 1024
	// budgetRounds: each cell is the median of this many runs, the
	// processor's and client-go's interleaved, so that a spell of load on a
	// shared machine lands on both sides.
	budgetRounds = 3
)

// BenchmarkBudget measures both record shapes, both modes and client-go's
// EventCorrelator on the duplicate-heavy stream (4 crashlooping pods) and
// on all-unique churn (a new pod and Event object per record), the
// retained heap per open series, and prints the budget table: each line
// the processor's CPU time per record, client-go's, the ratio, the
// allocations per record and whether the line holds. On churn it also
// measures the engine alone on the same records decoded (benchEngine), so
// the table shows what the decisions cost apart from pdata's reading and
// writing of every record. Run it with `make bench` (it takes some
// minutes); the sub-benchmarks' own lines are the raw runs.
func BenchmarkBudget(b *testing.B) {
	type cell struct{ series, legacy, engine, clientGo []measure }
	streams := []struct {
		name  string
		keyOf func(round int) func(int) int
		feed  feed
	}{
		{"duplicate-heavy", func(int) func(int) int { return func(i int) int { return i % 4 } }, feed{collect: true}},
		{"churn", func(int) func(int) int { return func(i int) int { return i } }, feed{churn: true}},
	}
	cells := map[string]*cell{}
	for round := range budgetRounds {
		for _, shape := range benchShapes {
			for _, s := range streams {
				key := s.name + "/" + shape.name
				if cells[key] == nil {
					cells[key] = &cell{}
				}
				c := cells[key]
				type side struct {
					name string
					into *[]measure
					run  func(*testing.B)
				}
				sides := []side{
					{modeSeries, &c.series, func(b *testing.B) { benchProcessor(b, modeSeries, rotatingBatches(shape, s.keyOf), s.feed) }},
					{modeLegacy, &c.legacy, func(b *testing.B) { benchProcessor(b, modeLegacy, rotatingBatches(shape, s.keyOf), s.feed) }},
					{"client-go", &c.clientGo, func(b *testing.B) { benchCorrelator(b, rotatingBatches(shape, s.keyOf), s.feed) }},
				}
				if s.feed.churn {
					sides = append(sides, side{"engine", &c.engine, func(b *testing.B) { benchEngine(b, rotatingBatches(shape, s.keyOf), s.feed) }})
				}
				for _, side := range sides {
					var last *measure // of the sub-benchmark's last call, the one it reports; nil if -bench left it out
					if b.Run(fmt.Sprintf("%s/%s/round-%d", key, side.name, round), func(b *testing.B) {
						side.run(b)
						m := lastMeasure
						last = &m
					}) && last != nil {
						*side.into = append(*side.into, *last)
					}
				}
			}
		}
	}
	retained := map[string]float64{}
	for _, shape := range benchShapes {
		b.Run("retained/"+shape.name, func(b *testing.B) {
			retained[shape.name] = retainedPerSeries(b, shape)
			b.ReportMetric(retained[shape.name], "B/series")
		})
	}

	lines := []string{"", "budget (medians of " + fmt.Sprint(budgetRounds) + " interleaved runs; CPU ns per record, client-go's EventCorrelator on the same occurrences):",
		fmt.Sprintf("%-16s %-19s %-7s %10s %10s %8s %8s %s", "stream", "shape", "mode", "ns/record", "client-go", "ratio", "allocs", "budget")}
	for _, s := range streams {
		for _, shape := range benchShapes {
			c := cells[s.name+"/"+shape.name]
			if c == nil || len(c.clientGo) == 0 {
				continue
			}
			cg := median(c.clientGo, func(m measure) float64 { return m.cpuNs })
			for _, mode := range []struct {
				name string
				ms   []measure
			}{{modeSeries, c.series}, {modeLegacy, c.legacy}, {"engine", c.engine}} {
				if len(mode.ms) == 0 {
					continue
				}
				ns := median(mode.ms, func(m measure) float64 { return m.cpuNs })
				allocs := median(mode.ms, func(m measure) float64 { return m.allocs })
				ratio := cg / ns
				verdict := verdictOf(ratio >= churnSpeedup && allocs <= maxChurnAllocs,
					fmt.Sprintf(">= %dx, <= %d allocs", churnSpeedup, maxChurnAllocs))
				if mode.name == "engine" { // the decisions alone, series mode: not a line of the processor's budget
					verdict = "no pdata: " + verdict
				}
				if s.name == "duplicate-heavy" {
					verdict = verdictOf(ratio >= dupSpeedup && allocs <= maxDupAllocs,
						fmt.Sprintf(">= %dx, <= %d alloc", dupSpeedup, maxDupAllocs))
				}
				lines = append(lines, fmt.Sprintf("%-16s %-19s %-7s %10.0f %10.0f %7.1fx %8.2f %s",
					s.name, shape.name, mode.name, ns, cg, ratio, allocs, verdict))
			}
		}
	}
	for _, shape := range benchShapes {
		r, ok := retained[shape.name]
		if !ok { // -bench left it out
			continue
		}
		lines = append(lines, fmt.Sprintf("%-16s %-19s %-7s %10s %10s %8s %8s %s", "retained", shape.name, "series",
			fmt.Sprintf("%.0f B", r), "", "", "",
			verdictOf(r <= maxRetained, fmt.Sprintf("<= %d B per open series", maxRetained))))
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

func median(ms []measure, of func(measure) float64) float64 {
	vs := make([]float64, len(ms))
	for i, m := range ms {
		vs[i] = of(m)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

func verdictOf(ok bool, budget string) string {
	if ok {
		return "ok (" + budget + ")"
	}
	return "MISSED (" + budget + ")"
}
