package k8seventsreceiver

import (
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
)

// The attribute values the receiver's metrics carry are declared in
// metadata.yaml (documentation.md lists them for operators).
func TestMetricAttributesAreDeclared(t *testing.T) {
	declared := configtest.MetricAttributes(t)
	types := []string{"listed"}
	for _, e := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		types = append(types, typeName(e))
	}
	configtest.RequireDeclared(t, declared, "receiver_k8sevents_events_received", "type", types...)
}
