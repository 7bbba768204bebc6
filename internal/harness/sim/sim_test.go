package sim

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"
)

// runSchedule runs s and fails t with the run's story on any violation.
func runSchedule(t *testing.T, text string) {
	t.Helper()
	s, err := ParseSchedule(text)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t, s)
	if err != nil {
		t.Fatalf("schedule could not run: %v\n%s", err, res.Report)
	}
	if len(res.Violations) > 0 {
		t.Fatalf("schedule:\n%s\n%s", s, res.Report)
	}
	if logComponents {
		t.Logf("%d objects written in %d writes\n%s", res.Written, res.Writes, res.Report)
	}
}

func TestSimMirrorWithoutFaults(t *testing.T) {
	runSchedule(t, `
shape mirror 1
series default pod-a BackOff kubelet count
series team-a pod-b Pulled kubelet series
series team-b pod-c Scheduled default-scheduler each
emit 0 1
advance 10s
emit 1 2
emit 2 1
advance 1m
emit 0 3
emit 1 1
advance 10m
emit 0 1
`)
}

func TestMain(m *testing.M) {
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	os.Exit(m.Run())
}

// TestSimSchedules runs generated schedules of every shape and checks the
// pipeline's promise after each (-rapid.checks sets how many per shape).
// A failing schedule is shrunk, then printed with the run's story.
func TestSimSchedules(t *testing.T) {
	for _, shape := range []Shape{ShapeMirror, ShapeIngest, ShapeTiers} {
		t.Run(string(shape), func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(rt *rapid.T) { checkSchedule(t, rt, genSchedule(rt, shape)) })
		})
	}
}

// FuzzSimSchedules drives the schedule generator from the fuzzer's bytes
// (make fuzz): the fuzzer keeps the schedules that reach new code.
func FuzzSimSchedules(f *testing.F) {
	shapes := []Shape{ShapeMirror, ShapeIngest, ShapeTiers}
	f.Fuzz(func(t *testing.T, b []byte) {
		rapid.MakeFuzz(func(rt *rapid.T) {
			shape := rapid.SampledFrom(shapes).Draw(rt, "shape")
			checkSchedule(t, rt, genSchedule(rt, shape))
		})(t, b)
	})
}

func checkSchedule(t *testing.T, rt *rapid.T, s Schedule) {
	res, err := Run(t, s)
	if err != nil {
		rt.Fatalf("schedule could not run: %v\n%s\n%s", err, s, res.Report)
	}
	if len(res.Violations) > 0 {
		rt.Fatalf("schedule:\n%s\n%s", s, res.Report)
	}
}

// TestSimReplay runs the schedule in the file $SIM_SCHEDULE (make sim
// SCHEDULE=file), as many times as $SIM_REPEAT says (1 by default).
func TestSimReplay(t *testing.T) {
	file := os.Getenv("SIM_SCHEDULE")
	if file == "" {
		t.Skip("SIM_SCHEDULE names no schedule file")
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	repeat, _ := strconv.Atoi(os.Getenv("SIM_REPEAT"))
	for range max(repeat, 1) {
		runSchedule(t, string(text))
	}
}

// TestSimSurvey (SIM_SURVEY=1; -rapid.checks schedules of each shape) runs
// generated schedules without stopping at a failure, and prints how many
// broke each property, with the shortest failing schedule of each: a map
// of what to fix.
func TestSimSurvey(t *testing.T) {
	if os.Getenv("SIM_SURVEY") == "" {
		t.Skip("SIM_SURVEY is not set")
	}
	for _, shape := range []Shape{ShapeMirror, ShapeIngest, ShapeTiers} {
		failures := map[string]int{}
		shortest := map[string]Schedule{}
		runs := 0
		t.Run(string(shape), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				s := genSchedule(rt, shape)
				res, err := Run(t, s)
				runs++
				seen := map[string]bool{}
				if err != nil {
					res.Violations = append(res.Violations, Violation{"run", err.Error()})
				}
				for _, v := range res.Violations {
					if seen[v.Property] {
						continue
					}
					seen[v.Property] = true
					failures[v.Property]++
					if old, ok := shortest[v.Property]; !ok || len(s.Steps) < len(old.Steps) {
						shortest[v.Property] = s
					}
				}
			})
		})
		t.Logf("%s: %d schedules", shape, runs)
		for p, c := range failures {
			t.Logf("  %s broken by %d; shortest:\n%s", p, c, shortest[p])
		}
	}
}

// TestSimKept replays every kept schedule (testdata/schedules): each is a
// sequence that broke the pipeline's promise before its fix.
func TestSimKept(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "schedules", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no kept schedules")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			runSchedule(t, string(text))
		})
	}
}

// TestSimHoles replays the schedules of known holes (testdata/holes): each
// must still break a property. One that passes was fixed: move it to
// testdata/schedules, where it guards the fix.
func TestSimHoles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "holes", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseSchedule(string(text))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(t, s)
			if err != nil {
				t.Fatalf("schedule could not run: %v", err)
			}
			if len(res.Violations) == 0 {
				t.Fatalf("%s breaks no property any more: move it to testdata/schedules", file)
			}
			t.Logf("still broken: %v", res.Violations[0])
		})
	}
}

// TestScheduleTextRoundTrips: a schedule printed reads back as the same
// schedule, every step kind included.
func TestScheduleTextRoundTrips(t *testing.T) {
	text := `shape tiers 2
series default pod-0 BackOff app-a count
series team-a pod-1 Pulled app-a series
emit 0 2
send 0 1
advance 1m30s
fault 429 * 12m0s 0
fault lost-answer tier2-0 0s 3
crash tier1-0
crash-at tier2-0 storage 1 after
crash-at tier2-1 api 2 before if-running
stop tier2-1
start tier2-1
start tier2-0 disk-ok
compact
disk tier2-0 failing
`
	s, err := ParseSchedule(text)
	require.NoError(t, err)
	assert.Equal(t, text, s.String())
	_, err = ParseSchedule("emit 0")
	assert.ErrorContains(t, err, "emit takes 2 fields")
}
