package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

const (
	// maxObjectBytes bounds the JSON size of an Event object the exporter
	// sends. An ordinary Event is about 1 KB; the API server limits few
	// fields, and an object of megabytes reaches etcd (or is answered 413,
	// or etcd's "request is too large" 500, which would be retried).
	maxObjectBytes = 16 << 10
	// maxOpenFieldBytes bounds the fields the API server leaves open (the
	// regarding and related objects' kind, apiVersion, uid, fieldPath,
	// resourceVersion; the legacy source) to the longest name it accepts.
	maxOpenFieldBytes = 253
)

// checkSize refuses an Event with an open field or a whole object larger
// than the bounds above.
func checkSize(ev *k8sevent.Event, api string) error {
	fields := map[string]string{"source.component": ev.SourceComponent, "source.host": ev.SourceHost}
	for prefix, ref := range map[string]k8sevent.ObjectRef{"regarding": ev.Regarding, "related": ev.Related} {
		for k, v := range map[string]string{"kind": ref.Kind, "apiVersion": ref.APIVersion, "uid": ref.UID,
			"fieldPath": ref.FieldPath, "resourceVersion": ref.ResourceVersion, "name": ref.Name, "namespace": ref.Namespace} {
			fields[prefix+"."+k] = v
		}
	}
	for k, v := range fields {
		if len(v) > maxOpenFieldBytes {
			return fmt.Errorf("%s: %d bytes, more than %d", k, len(v), maxOpenFieldBytes)
		}
	}
	var obj any = ev.ToEventsV1()
	if api == k8sevent.APICoreV1 {
		obj = ev.ToCoreV1()
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if len(data) > maxObjectBytes {
		return fmt.Errorf("object of %d bytes, more than %d", len(data), maxObjectBytes)
	}
	return nil
}

// tooLarge says the API server or etcd refused a request for its size: 413,
// or etcd's "request is too large" as a 500. Sending it again cannot help.
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsInternalError(err) && strings.Contains(err.Error(), "request is too large")
}
