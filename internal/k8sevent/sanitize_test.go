package k8sevent_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A Sanitizer remembers the last namespace and reporting controller it
// found valid: the next record's different value is checked all the same,
// and refused when invalid, also when it differs from the memo in one byte.
func TestSanitizerChecksAValueAfterTheRememberedOne(t *testing.T) {
	var s k8sevent.Sanitizer
	ev := goodEvent()
	ev.ReportingController = "k8s.io/kubelet"
	repaired, fatal := s.Sanitize(&ev, now)
	require.Zero(t, repaired|fatal)
	require.Equal(t, "k8s.io/kubelet", ev.ReportingController)

	ev = goodEvent()
	ev.ReportingController = "k8s.io/kubelet-" // one byte more: not a qualified name
	repaired, fatal = s.Sanitize(&ev, now)
	require.Equal(t, k8sevent.ProblemBadController, repaired)
	require.Zero(t, fatal)
	require.Empty(t, ev.ReportingController)

	ev = goodEvent()
	ev.Regarding.Namespace = goodEvent().Regarding.Namespace + "-" // after the remembered valid one
	_, fatal = s.Sanitize(&ev, now)
	require.Equal(t, k8sevent.ProblemBadNamespace, fatal)

	ev = goodEvent()
	ev.Namespace, ev.Regarding.Namespace = "", "" // an empty namespace is default's, not the memo's
	repaired, fatal = s.Sanitize(&ev, now)
	require.Zero(t, repaired|fatal)
	require.Equal(t, "default", ev.ObjectNamespace())

	// The remembered values are still accepted after a refusal.
	ev = goodEvent()
	ev.ReportingController = strings.Clone("k8s.io/kubelet")
	repaired, fatal = s.Sanitize(&ev, now)
	require.Zero(t, repaired|fatal)
	require.Equal(t, "k8s.io/kubelet", ev.ReportingController)
}

// One Sanitizer over a long stream decides every record as Sanitize does
// on its own: values valid and not, repeated and changed, in any order.
func TestSanitizerDecidesAsSanitize(t *testing.T) {
	namespaces := []string{"", "default", "ns", "ns-", "-ns", "NS", "n.s", strings.Repeat("n", 63), strings.Repeat("n", 64), "kube-system"}
	controllers := []string{"", "kubelet", "k8s.io/kubelet", "k8s.io/", "/kubelet", "kube let", "a_b", "-a", strings.Repeat("c", 63), strings.Repeat("c", 64)}
	rng := rand.New(rand.NewPCG(14, 24))
	var s k8sevent.Sanitizer
	for i := range 20000 {
		ev := goodEvent()
		ev.Regarding.Namespace = strings.Clone(namespaces[rng.IntN(len(namespaces))])
		if rng.IntN(4) == 0 {
			ev.Namespace = strings.Clone(namespaces[rng.IntN(len(namespaces))])
		}
		ev.ReportingController = strings.Clone(controllers[rng.IntN(len(controllers))])
		want := ev
		wantRepaired, wantFatal := k8sevent.Sanitize(&want, now)
		repaired, fatal := s.Sanitize(&ev, now)
		require.Equal(t, wantRepaired, repaired, "record %d", i)
		require.Equal(t, wantFatal, fatal, "record %d", i)
		require.Equal(t, want, ev, "record %d", i)
	}
}

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
