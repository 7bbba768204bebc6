package sim

import (
	"testing"
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
	t.Logf("%d objects written in %d writes\n%s", res.Written, res.Writes, res.Report)
	if len(res.Violations) > 0 {
		t.Fatalf("schedule:\n%s\n%s", s, res.Report)
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
