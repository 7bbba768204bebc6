package k8seventexporter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestWritesAcceptedTypes (issue 17 item 5): records keep Error and
// Critical (the processor no longer downgrades them); the exporter alone
// makes them a type the API server accepts, Warning, in both APIs, on the
// create and on the count patch that follows. events.k8s.io/v1 refuses
// any other type: without the exporter's normalisation these writes fail.
func TestWritesAcceptedTypes(t *testing.T) {
	r := newRig(t)
	cs := r.srv.Clientset()
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		for typ, want := range map[string]string{
			k8sevent.TypeError: k8sevent.TypeWarning, k8sevent.TypeCritical: k8sevent.TypeWarning, k8sevent.TypeNormal: k8sevent.TypeNormal,
		} {
			t.Run(api+" "+typ, func(t *testing.T) {
				exp, tel := r.start(t, func(c *Config) { c.API = api })
				name := strings.ToLower("web-1.type-" + typ + "-" + strings.ReplaceAll(strings.ReplaceAll(api, "/", "-"), ".k8s.io", ""))
				first, second := record(name, k8sevent.StateSingleton, 1, t0), record(name, k8sevent.StateStarted, 2, t0.Add(10*time.Second))
				first.Type, second.Type = typ, typ
				send(t, exp, first)
				send(t, exp, second)
				require.Eventually(t, func() bool { return counter(t, tel, "otelcol_exporter_k8sevent_writes", "outcome", "patched") == 1 },
					30*time.Second, 20*time.Millisecond)
				assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevent_permanent_failures", "reason", "rejected"))
				got, err := cs.CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, want, got.Type)
				assert.Equal(t, int64(2), k8sevent.CoreV1Occurrences(got), "the patch went through too")
			})
		}
	}
}
