package k8sevent_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Each of the fields cut at MaxFieldBytes is cut on its own, the others
// at the limit or empty: Sanitize looks at all three when any is long.
func TestSanitizeCutsEachLongFieldAlone(t *testing.T) {
	fields := []func(*k8sevent.Event) *string{
		func(e *k8sevent.Event) *string { return &e.Reason },
		func(e *k8sevent.Event) *string { return &e.Action },
		func(e *k8sevent.Event) *string { return &e.ReportingInstance },
	}
	for i, long := range fields {
		for _, others := range []string{"", strings.Repeat("o", k8sevent.MaxFieldBytes)} {
			ev := goodEvent()
			for j, f := range fields {
				if j != i && (j != 0 || others != "") { // the reason stays set: its absence is fatal
					*f(&ev) = others
				}
			}
			*long(&ev) = strings.Repeat("l", k8sevent.MaxFieldBytes+1)
			repaired, fatal := k8sevent.Sanitize(&ev, now)
			require.Zero(t, fatal, "field %d", i)
			require.Equal(t, k8sevent.ProblemLongField, repaired, "field %d", i)
			require.Equal(t, strings.Repeat("l", k8sevent.MaxFieldBytes), *long(&ev), "field %d", i)
		}
	}
}

// A Sanitizer that remembers the last valid namespace and controller
// decides as Sanitize does on every record of a stream that mixes valid
// and invalid ones, the remembered value included, in any order.
func TestSanitizerDecidesAsSanitize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	namespaces := []string{"", "default", "team-a", "Team-A", "a.b", strings.Repeat("n", 64)}
	controllers := []string{"", "k8sevents.io/x", "kubelet", "bad controller", "a/b/c", "-x", "example.com/" + strings.Repeat("c", 64)}
	var s k8sevent.Sanitizer
	for i := range 2000 {
		ev := goodEvent()
		ev.Regarding.Namespace = namespaces[rng.IntN(len(namespaces))]
		ev.ReportingController = controllers[rng.IntN(len(controllers))]
		want := ev
		wantRepaired, wantFatal := k8sevent.Sanitize(&want, now)
		repaired, fatal := s.Sanitize(&ev, now)
		require.Equal(t, want, ev, "record %d", i)
		require.Equal(t, wantRepaired, repaired, "record %d", i)
		require.Equal(t, wantFatal, fatal, "record %d: %q %q", i, ev.Regarding.Namespace, want.ReportingController)
	}
}
