package k8seventexporter

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestKeptInstanceNamesTheSender: with keep_record_instance (behind
// k8seventsotlp, where tier 1 writes each record's reporting instance as
// its client's identity), the Event shows the client as its reporter, in
// both APIs and in core/v1's source (kubectl describe's From), with the
// controller still forced; the writing collector is named in an
// annotation. Two clients' series of one object and reason stay two
// objects, even with adopt_open_series, and a client's record that names
// another client's object is moved to a name of its own rather than
// patching it.
func TestKeptInstanceNamesTheSender(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const controller = "k8sevents.io/otlp-ingestion"
	a, b := "system:serviceaccount:shop:app-a@shop", "system:serviceaccount:shop:app-b@shop"
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		pod := "web-" + map[string]string{k8sevent.APIEventsV1: "events", k8sevent.APICoreV1: "core"}[api]
		t.Run(api, func(t *testing.T) {
			exp, tel := r.start(t, func(c *Config) {
				c.API, c.ReportingController, c.ReportingInstance = api, controller, "tier2-0"
				c.KeepRecordInstance, c.AdoptOpenSeries = true, true
			})
			of := func(instance, name string, count int64) k8sevent.Event {
				ev := seriesOf(pod, name, t0, 1, count)[1]
				ev.ReportingController, ev.ReportingInstance, ev.SourceComponent, ev.SourceHost = "", instance, "", ""
				return ev
			}
			send(t, exp, of(a, pod+".a", 3))
			send(t, exp, of(b, pod+".b", 5))
			send(t, exp, of(b, pod+".a", 50)) // client b names client a's object
			other := of(a, pod+".a", 70)      // and a series of another pod does
			other.Regarding.Name, other.Regarding.UID = pod+"-other", "uid-other"
			send(t, exp, other)
			// Without a queue a push returns once its records are written.
			assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "conflict"))

			l, err := r.srv.Clientset().CoreV1().Events("shop").List(context.Background(),
				metav1.ListOptions{})
			require.NoError(t, err)
			counts := map[string]int64{}
			for i := range l.Items {
				got := &l.Items[i]
				if !strings.HasPrefix(got.InvolvedObject.Name, pod) {
					continue // the other API's
				}
				ev := k8sevent.FromCoreV1(got)
				if got.InvolvedObject.Name == pod {
					counts[got.ReportingInstance] += ev.Occurrences()
				}
				assert.Equal(t, controller, got.ReportingController, got.Name)
				assert.Equal(t, "tier2-0", got.Annotations[k8sevent.AnnotationWrittenBy], got.Name)
				if api == k8sevent.APICoreV1 {
					assert.Equal(t, corev1.EventSource{Component: controller, Host: got.ReportingInstance}, got.Source, "core/v1 source of %s", got.Name)
				}
				if got.InvolvedObject.Name == pod+"-other" {
					assert.Equal(t, int64(70), ev.Occurrences(), "the other pod's series has an object of its own")
				}
				if got.Name == pod+".a" {
					assert.Equal(t, a, got.ReportingInstance, "client a's object keeps client a's reporter")
					assert.Equal(t, int64(3), ev.Occurrences(), "client b's record did not patch client a's object")
				}
			}
			assert.Equal(t, map[string]int64{a: 3, b: 55}, counts, fmt.Sprintf("occurrences per reporter, objects: %d", len(l.Items)))
		})
	}
}
