package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCheckerFindsAWriteWhereNoAppMayWrite: P4 holds a collector's Event
// to the namespaces some app may create Events in; one written elsewhere
// (a summary carried into another namespace, say) is a violation.
func TestCheckerFindsAWriteWhereNoAppMayWrite(t *testing.T) {
	w := newWorld(t, ShapeIngest, 1)
	w.mayCreate["team-a"] = true
	for _, ns := range []string{"team-a", "team-b"} {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web." + ns, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"}, Reason: "BackOff",
			Type: corev1.EventTypeWarning, ReportingController: ingestCtrl, ReportingInstance: "sim",
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
	require.Len(t, p4, 1)
	assert.Contains(t, p4[0], "team-b")
}
