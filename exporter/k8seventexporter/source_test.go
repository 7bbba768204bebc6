package k8seventexporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Tests of what a written Event says of its source: its type and its
// cluster.

// eachAPI runs f in a subtest per API, with an exporter writing through it
// and a suffix that makes object names unique per API.
func eachAPI(t *testing.T, r *rig, f func(t *testing.T, suffix string, exp exporter.Logs, tel *componenttest.Telemetry)) {
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		t.Run(api, func(t *testing.T) {
			exp, tel := r.start(t, func(c *Config) { c.API = api })
			f(t, strings.ReplaceAll(strings.ReplaceAll(api, "/", "-"), ".k8s.io", ""), exp, tel)
		})
	}
}

// TestWritesAcceptedTypes: records keep Error and Critical (the processor
// does not downgrade them); the exporter alone makes them a type the API
// server accepts, Warning, in both APIs, on the create and on the count
// patch that follows. events.k8s.io/v1 refuses any other type: without the
// exporter's normalisation these writes fail.
func TestWritesAcceptedTypes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	eachAPI(t, r, func(t *testing.T, suffix string, exp exporter.Logs, tel *componenttest.Telemetry) {
		want := map[string]string{}
		for typ, apiType := range map[string]string{
			k8sevent.TypeError: k8sevent.TypeWarning, k8sevent.TypeCritical: k8sevent.TypeWarning, k8sevent.TypeNormal: k8sevent.TypeNormal,
		} {
			name := strings.ToLower("web-1.type-" + typ + "-" + suffix)
			first, second := record(name, k8sevent.StateSingleton, 1, t0), record(name, k8sevent.StateStarted, 2, t0.Add(10*time.Second))
			first.Type, second.Type = typ, typ
			send(t, exp, first)
			send(t, exp, second)
			want[name] = apiType
		}
		require.Eventually(t, func() bool { return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched") == 3 },
			30*time.Second, 20*time.Millisecond)
		assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"))
		for name, apiType := range want {
			got, err := r.srv.Clientset().CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, apiType, got.Type, name)
			assert.Equal(t, int64(2), k8sevent.CoreV1Occurrences(got), "%s: the patch went through too", name)
		}
	})
}

// TestMarksTheSourceCluster: an Event written for a record that states its
// cluster carries it in annotations, in both APIs, so that a hub written to
// by many clusters tells their Events apart; one that states none carries
// no annotation.
func TestMarksTheSourceCluster(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	eachAPI(t, r, func(t *testing.T, suffix string, exp exporter.Logs, tel *componenttest.Telemetry) {
		east := record("web-1.east-"+suffix, k8sevent.StateSingleton, 1, t0)
		east.Cluster = k8sevent.Cluster{Name: "east", UID: "0f9e-east"}
		uidOnly := record("web-1.uid-"+suffix, k8sevent.StateSingleton, 1, t0)
		uidOnly.Cluster = k8sevent.Cluster{UID: "0f9e-west"}
		none := record("web-1.none-"+suffix, k8sevent.StateSingleton, 1, t0)
		send(t, exp, east, uidOnly, none)
		require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 3 }, 30*time.Second, 20*time.Millisecond)
		for name, want := range map[string]map[string]string{
			east.Name:    {k8sevent.AnnotationSourceCluster: "east", k8sevent.AnnotationSourceClusterUID: "0f9e-east"},
			uidOnly.Name: {k8sevent.AnnotationSourceCluster: "0f9e-west", k8sevent.AnnotationSourceClusterUID: "0f9e-west"},
			none.Name:    nil,
		} {
			got, err := r.srv.Clientset().CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, want, got.Annotations, name)
		}
	})
}

// TestSourceFollowsTheForcedReporter: a record claiming kubelet as its
// source (component and host) is written with the exporter's reporting
// controller and instance as its source too, in both APIs, so kubectl
// describe ("From", source.component first) never shows an app's Event
// as kubelet's; with override_reporting false, the record's own source
// and controller are kept.
func TestSourceFollowsTheForcedReporter(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, override := range []bool{true, false} {
		for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
			name := fmt.Sprintf("web-1.claims-kubelet-%v-%s", override, strings.ReplaceAll(strings.ReplaceAll(api, "/", "-"), ".k8s.io", ""))
			t.Run(name, func(t *testing.T) {
				exp, tel := r.start(t, func(c *Config) {
					c.API, c.OverrideReporting, c.ReportingInstance = api, override, "collector-0"
				})
				ev := record(name, k8sevent.StateSingleton, 1, t0) // claims kubelet on node-1
				send(t, exp, ev)
				require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 }, 30*time.Second, 20*time.Millisecond)
				got, err := r.srv.Clientset().CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
				require.NoError(t, err)
				want := corev1.EventSource{Component: "k8sevents.io/exporter", Host: "collector-0"}
				if !override {
					want = corev1.EventSource{Component: "kubelet", Host: "node-1"}
				}
				assert.Equal(t, want.Component, got.ReportingController)
				if api == k8sevent.APICoreV1 {
					assert.Equal(t, want, got.Source, "core/v1 source")
				} else {
					assert.Empty(t, got.Source, "events.k8s.io/v1 writes no source")
				}
			})
		}
	}
}
