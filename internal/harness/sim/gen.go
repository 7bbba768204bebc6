package sim

import (
	"fmt"
	"time"

	"pgregory.net/rapid"
)

// Generated schedules: rapid draws each choice, so a failing schedule
// shrinks to a short one (fewer steps, smaller numbers) before it is
// printed.

var (
	reasons     = []string{"BackOff", "Pulled", "Unhealthy", "FailedScheduling"}
	controllers = []string{"kubelet", "default-scheduler"}
	appNames    = []string{"app-a", "app-b"}
	advances    = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 7 * time.Minute, 20 * time.Minute}
	faultSpans  = []time.Duration{5 * time.Second, time.Minute, 6 * time.Minute, 12 * time.Minute}
	faultKinds  = []FaultKind{FaultDown, FaultUnavailable, FaultThrottled, FaultForbidden, FaultStarting, FaultHalfSynced, FaultLostAnswer, FaultTimeout}
	effectKinds = []string{effectAPI, effectStorage, effectSend, effectAnswer}
)

// processNames are the processes of a shape.
func processNames(shape Shape, replicas int) []string {
	var out []string
	switch shape {
	case ShapeMirror:
		for i := range replicas {
			out = append(out, fmt.Sprintf("mirror-%d", i))
		}
	case ShapeIngest:
		out = []string{"ingest-0"}
	case ShapeTiers:
		for i := range replicas {
			out = append(out, fmt.Sprintf("tier2-%d", i))
		}
		out = append(out, "tier1-0")
	}
	return out
}

// Every step the generator draws can come at any moment: a crash placed
// on a process that is down hits its next start, and a start may find its
// disk refusing writes (the exporter's queue then waits for it).

// genSchedule draws a schedule of shape.
func genSchedule(t *rapid.T, shape Shape) Schedule {
	s := Schedule{Shape: shape, Replicas: 1}
	switch shape {
	case ShapeTiers:
		s.Replicas = 2
		s.Sink = rapid.Bool().Draw(t, "sink")
	}
	procs := processNames(shape, s.Replicas)
	nSeries := rapid.IntRange(1, 5).Draw(t, "series")
	seen := map[seriesKey]bool{}
	for len(s.Series) < nSeries {
		sr := SourceSeries{
			Namespace: rapid.SampledFrom(namespaces).Draw(t, "namespace"),
			Pod:       fmt.Sprintf("pod-%d", rapid.IntRange(0, 3).Draw(t, "pod")),
			Reason:    rapid.SampledFrom(reasons).Draw(t, "reason"),
		}
		if shape == ShapeMirror {
			sr.Controller = rapid.SampledFrom(controllers).Draw(t, "controller")
			sr.Style = EmitStyle(rapid.IntRange(0, 2).Draw(t, "style"))
		} else {
			sr.Controller = rapid.SampledFrom(appNames).Draw(t, "app")
		}
		// Two series of one key would be one series to the checker.
		if !seen[sr.key()] {
			seen[sr.key()] = true
			s.Series = append(s.Series, sr)
		}
	}
	steps := rapid.IntRange(1, 30).Draw(t, "steps")
	for range steps {
		s.Steps = append(s.Steps, genStep(t, nSeries, procs))
	}
	return s
}

func genStep(t *rapid.T, nSeries int, procs []string) Step {
	proc := func() string { return rapid.SampledFrom(procs).Draw(t, "proc") }
	switch k := rapid.IntRange(0, 99).Draw(t, "kind"); {
	case k < 40:
		return Emit{Series: rapid.IntRange(0, nSeries-1).Draw(t, "series"), N: rapid.IntRange(1, 3).Draw(t, "n")}
	case k < 65:
		return Advance{D: rapid.SampledFrom(advances).Draw(t, "advance")}
	case k < 77:
		f := Fault{Kind: rapid.SampledFrom(faultKinds).Draw(t, "fault")}
		if rapid.Bool().Draw(t, "one process") {
			f.Proc = proc()
		}
		if rapid.Bool().Draw(t, "by count") {
			f.N = rapid.IntRange(1, 5).Draw(t, "requests")
		} else {
			f.D = rapid.SampledFrom(faultSpans).Draw(t, "span")
		}
		return f
	case k < 82:
		return Crash{Proc: proc()}
	case k < 88:
		return CrashAt{Proc: proc(), Kind: rapid.SampledFrom(effectKinds).Draw(t, "effect"),
			N: rapid.IntRange(1, 4).Draw(t, "nth"), After: rapid.Bool().Draw(t, "after")}
	case k < 91:
		return Stop{Proc: proc()}
	case k < 96:
		return Start{Proc: proc(), DiskOK: rapid.Bool().Draw(t, "disk ok")}
	case k < 98:
		return Compact{}
	default:
		return DiskFault{Proc: proc(), Failing: rapid.Bool().Draw(t, "failing")}
	}
}
