package sim

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is one simulated run: a shape, the series its sources make, and
// the steps in order. Its text form (String, ParseSchedule) is what a
// failing run prints and what testdata/schedules keeps.
type Schedule struct {
	Shape    Shape
	Replicas int
	Sink     bool // tier 2 hands its records to a log sink too (the tiers shape)
	Series   []SourceSeries
	Steps    []Step

	crashIfRunning bool // parsing: the crash-at line being read has if-running
}

// Step is one thing that happens to the world.
type Step interface {
	apply(ctx context.Context, w *World) error
	String() string
}

// Emit: a source records N occurrences of series Series now (the cluster's
// components in the mirror shape; an app's request in the OTLP shapes).
type Emit struct{ Series, N int }

// Send: an app sends one request with one occurrence of each series (all
// of one app's): a request tier 1 splits over several tier-2 collectors.
type Send struct{ Series []int }

// Advance: time passes.
type Advance struct{ D time.Duration }

// Fault: the API server answers Proc's requests ("" every process's) with
// Kind for D, or for the next N requests it applies to when D is 0.
type Fault struct {
	Kind FaultKind
	Proc string
	D    time.Duration
	N    int
}

// Crash: Proc dies now (SIGKILL, OOM, node loss): its memory is gone, its
// disk kept.
type Crash struct{ Proc string }

// CrashAt: Proc dies at its N-th effect of Kind from now (api, storage,
// send, answer), before the effect or just after it; a process that is
// down dies at the N-th effect of its next start.
type CrashAt struct {
	Proc, Kind string
	N          int
	After      bool
	whileUp    bool // only on a running process, no-op on one that is down (if-running)
}

// Stop: Proc is stopped gracefully (SIGTERM: a rollout, a drain).
type Stop struct{ Proc string }

// Start: Proc starts (again), if it is down; with DiskOK, on a disk that
// takes writes (a disk fault ends first).
type Start struct {
	Proc   string
	DiskOK bool
}

// Compact: the API server forgets the history of resourceVersions up to
// now (etcd compaction): a watch from an older one answers 410.
type Compact struct{}

// DiskFault: Proc's storage refuses writes (Failing), or takes them again.
type DiskFault struct {
	Proc    string
	Failing bool
}

func (s Emit) String() string    { return fmt.Sprintf("emit %d %d", s.Series, s.N) }
func (s Advance) String() string { return "advance " + s.D.String() }
func (s Send) String() string {
	return strings.TrimSpace("send " + strings.Trim(fmt.Sprint(s.Series), "[]"))
}
func (s Fault) String() string {
	return fmt.Sprintf("fault %s %s %s %d", s.Kind, procOrAll(s.Proc), s.D, s.N)
}
func (s Crash) String() string { return "crash " + s.Proc }
func (s CrashAt) String() string {
	out := fmt.Sprintf("crash-at %s %s %d %s", s.Proc, s.Kind, s.N, map[bool]string{false: "before", true: "after"}[s.After])
	if s.whileUp {
		out += " if-running"
	}
	return out
}
func (s Stop) String() string { return "stop " + s.Proc }
func (s Start) String() string {
	if s.DiskOK {
		return "start " + s.Proc + " disk-ok"
	}
	return "start " + s.Proc
}
func (Compact) String() string { return "compact" }
func (s DiskFault) String() string {
	return fmt.Sprintf("disk %s %s", s.Proc, map[bool]string{false: "ok", true: "failing"}[s.Failing])
}

func procOrAll(p string) string {
	if p == "" {
		return "*"
	}
	return p
}

func (s Emit) apply(ctx context.Context, w *World) error {
	if s.Series >= len(w.emitters.series) {
		return fmt.Errorf("emit: no series %d", s.Series)
	}
	return w.emitters.emit(ctx, s.Series, s.N)
}

func (s Send) apply(_ context.Context, w *World) error {
	return w.emitters.send(s.Series)
}

func (s Advance) apply(_ context.Context, w *World) error {
	w.advance(s.D)
	return nil
}

func (s Fault) apply(_ context.Context, w *World) error {
	f := &apiFault{kind: s.Kind, proc: s.Proc, left: s.N}
	if s.D == 0 && (s.Kind == FaultStarting || s.Kind == FaultHalfSynced) {
		s.D = time.Duration(max(s.N, 1)) * 5 * time.Second // a server's start lasts a time, not a number of requests
	}
	if s.D > 0 {
		f.until = time.Now().Add(s.D)
	}
	w.addFault(f)
	return nil
}

func (s Crash) apply(_ context.Context, w *World) error {
	p, err := w.proc(s.Proc)
	if err == nil {
		p.crash()
	}
	return err
}

func (s CrashAt) apply(_ context.Context, w *World) error {
	p, err := w.proc(s.Proc)
	if err != nil {
		return err
	}
	switch {
	case p.inc == nil && s.whileUp:
	case p.inc == nil:
		p.crashAt = &crashPoint{kind: s.Kind, n: s.N, after: s.After}
	default:
		p.inc.life.arm(s.Kind, s.N, s.After)
	}
	return nil
}

func (s Stop) apply(ctx context.Context, w *World) error {
	p, err := w.proc(s.Proc)
	if err == nil {
		if err := p.stop(ctx); err != nil {
			w.logf("%s stopped with: %v", s.Proc, err)
		}
	}
	return err
}

func (s Start) apply(ctx context.Context, w *World) error {
	p, err := w.proc(s.Proc)
	if err != nil || p.inc != nil && !p.died() {
		return err
	}
	if s.DiskOK {
		p.disk.setFailing(false)
	}
	if err := p.start(ctx); err != nil {
		return err
	}
	w.logf("%s started (incarnation %d)", s.Proc, p.incarnations)
	return nil
}

func (Compact) apply(_ context.Context, w *World) error {
	w.api.Compact()
	return nil
}

func (s DiskFault) apply(_ context.Context, w *World) error {
	p, err := w.proc(s.Proc)
	if err == nil {
		p.disk.setFailing(s.Failing)
	}
	return err
}

func (w *World) proc(name string) (*process, error) {
	p, ok := w.procs[name]
	if !ok {
		return nil, fmt.Errorf("no process %q", name)
	}
	return p, nil
}

// String is the schedule's text form, one line each: the shape, the
// series, then the steps.
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shape %s %d", s.Shape, s.Replicas)
	if s.Sink {
		b.WriteString(" sink")
	}
	b.WriteString("\n")
	for _, sr := range s.Series {
		fmt.Fprintf(&b, "series %s %s %s %s %s\n", sr.Namespace, sr.Pod, sr.Reason, sr.Controller, sr.Style)
	}
	for _, st := range s.Steps {
		fmt.Fprintln(&b, st.String())
	}
	return b.String()
}

// ParseSchedule reads what String wrote; blank lines and lines starting
// with # are skipped.
func ParseSchedule(text string) (Schedule, error) {
	var s Schedule
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if err := s.parseLine(f); err != nil {
			return Schedule{}, fmt.Errorf("line %d %q: %w", line, sc.Text(), err)
		}
	}
	return s, sc.Err()
}

func (s *Schedule) parseLine(f []string) error {
	if f[0] == "send" {
		var series []int
		for _, v := range f[1:] {
			n, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			series = append(series, n)
		}
		s.Steps = append(s.Steps, Send{Series: series})
		return nil
	}
	want := map[string]int{"shape": 3, "series": 6, "emit": 3, "advance": 2, "fault": 5, "crash": 2, "crash-at": 5,
		"stop": 2, "start": 2, "compact": 1, "disk": 3}
	n, ok := want[f[0]]
	if !ok {
		return fmt.Errorf("unknown step %q", f[0])
	}
	if f[0] == "start" && len(f) == 3 && f[2] == "disk-ok" {
		s.Steps = append(s.Steps, Start{Proc: f[1], DiskOK: true})
		return nil
	}
	if f[0] == "shape" && len(f) == 4 && f[3] == "sink" {
		f, s.Sink = f[:3], true
	}
	if f[0] == "crash-at" && len(f) == 6 && f[5] == "if-running" {
		f, s.crashIfRunning = f[:5], true
	}
	if len(f) != n {
		return fmt.Errorf("%s takes %d fields", f[0], n-1)
	}
	var err error
	num := func(v string) int {
		i, e := strconv.Atoi(v)
		err = cmpErr(err, e)
		return i
	}
	dur := func(v string) time.Duration {
		d, e := time.ParseDuration(v)
		err = cmpErr(err, e)
		return d
	}
	switch f[0] {
	case "shape":
		s.Shape, s.Replicas = Shape(f[1]), num(f[2])
	case "series":
		style := map[string]EmitStyle{"count": StyleCount, "series": StyleSeries, "each": StyleEach}[f[5]]
		s.Series = append(s.Series, SourceSeries{Namespace: f[1], Pod: f[2], Reason: f[3], Controller: f[4], Style: style})
	case "emit":
		s.Steps = append(s.Steps, Emit{Series: num(f[1]), N: num(f[2])})
	case "advance":
		s.Steps = append(s.Steps, Advance{D: dur(f[1])})
	case "fault":
		proc := f[2]
		if proc == "*" {
			proc = ""
		}
		s.Steps = append(s.Steps, Fault{Kind: FaultKind(f[1]), Proc: proc, D: dur(f[3]), N: num(f[4])})
	case "crash":
		s.Steps = append(s.Steps, Crash{Proc: f[1]})
	case "crash-at":
		s.Steps = append(s.Steps, CrashAt{Proc: f[1], Kind: f[2], N: num(f[3]), After: f[4] == "after", whileUp: s.crashIfRunning})
		s.crashIfRunning = false
	case "stop":
		s.Steps = append(s.Steps, Stop{Proc: f[1]})
	case "start":
		s.Steps = append(s.Steps, Start{Proc: f[1]})
	case "compact":
		s.Steps = append(s.Steps, Compact{})
	case "disk":
		s.Steps = append(s.Steps, DiskFault{Proc: f[1], Failing: f[2] == "failing"})
	}
	return err
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
