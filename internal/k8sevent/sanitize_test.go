package k8sevent_test

import (
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
