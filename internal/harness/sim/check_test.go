package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCheckerFindsAWriteWhereNoAppMayWrite: P4 holds a collector's Event
// to the namespaces some app may create Events in, and its reporter to an
// app allowed there; one written elsewhere (a summary carried into
// another namespace, say), or showing another app, is a violation.
func TestCheckerFindsAWriteWhereNoAppMayWrite(t *testing.T) {
	w := newWorld(t, ShapeIngest, 1, false)
	w.mayCreate["team-a"] = map[string]bool{appUserPrefix + "a": true}
	for _, c := range []struct{ ns, name, reporter string }{
		{"team-a", "web.ok", appUserPrefix + "a@team-a"},
		{"team-b", "web.elsewhere", appUserPrefix + "a@team-b"},
		{"team-a", "web.other-app", appUserPrefix + "b@team-a"},
		{"team-a", "web.collector", "sim"},
	} {
		ns := c.ns
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"}, Reason: "BackOff",
			Type: corev1.EventTypeWarning, ReportingController: ingestCtrl, ReportingInstance: c.reporter,
			Source: corev1.EventSource{Component: ingestCtrl}}
		_, err := w.admin.CoreV1().Events(ns).Create(context.Background(), ev, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var p4 []string
	for _, v := range w.check(ingestCtrl) {
		if strings.HasPrefix(v.String(), "P4") {
			p4 = append(p4, v.String())
		}
	}
	require.Len(t, p4, 3, "%q", p4)
	assert.Contains(t, p4[0]+p4[1]+p4[2], "no app may create Events in namespace team-b")
	for _, name := range []string{"web.other-app", "web.collector"} {
		assert.Contains(t, p4[0]+p4[1]+p4[2], name)
	}
}

// TestSeriesBoundTakesEachChoiceOfUnsureArrivals: an arrival at a
// processor that crashed may or may not have been counted; the bound on
// the series is the most any choice makes, whether the unsure arrival
// closes a gap (left out, the gap stays) or opens one (counted, it starts
// a series after a gap).
func TestSeriesBoundTakesEachChoiceOfUnsureArrivals(t *testing.T) {
	const fa = 6 * time.Minute
	at := func(d time.Duration, sure bool) arrival {
		return arrival{at: time.Unix(0, 0).Add(d), finishAfter: fa, sure: sure}
	}
	for _, c := range []struct {
		name     string
		arrivals []arrival
		want     int
	}{
		{"none", nil, 0},
		{"sure, no gap", []arrival{at(0, true), at(5*time.Minute, true), at(10*time.Minute, true)}, 1},
		{"sure, one gap", []arrival{at(0, true), at(6*time.Minute, true), at(7*time.Minute, true)}, 2},
		{"unsure arrivals in a gap", []arrival{at(0, true), at(2*time.Minute, false), at(4*time.Minute, false), at(6*time.Minute, true)}, 2},
		{"unsure arrival after a gap", []arrival{at(0, true), at(7*time.Minute, false)}, 2},
		{"unsure first", []arrival{at(0, false), at(7*time.Minute, true)}, 2},
		{"sure in between is kept", []arrival{at(0, true), at(3*time.Minute, true), at(6*time.Minute, true)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, seriesBound(c.arrivals))
		})
	}
}
