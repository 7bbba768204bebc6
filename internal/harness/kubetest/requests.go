package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
)

// Requests counts an API server's requests by "VERB code" (e.g.
// "PATCH 409"), as its apiserver_request_total says.
type Requests map[string]int64

// EventRequests reads the API server's requests for events so far (both
// Event APIs) by verb and code.
func EventRequests(ctx context.Context, cs kubernetes.Interface) (Requests, error) {
	m, err := Metrics(ctx, cs)
	if err != nil {
		return nil, err
	}
	out := Requests{}
	for key, v := range m {
		if !strings.HasPrefix(key, "apiserver_request_total{") || !strings.Contains(key, `resource="events"`) {
			continue
		}
		out[label(key, "verb")+" "+label(key, "code")] += int64(v)
	}
	return out, nil
}

// Metrics reads the API server's /metrics.
func Metrics(ctx context.Context, cs kubernetes.Interface) (collectorproc.Metrics, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read apiserver metrics: %w", err)
	}
	m, err := collectorproc.ParseMetrics(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse apiserver metrics: %w", err)
	}
	return m, nil
}

// label is the value of one label in a metric key name{a="x",b="y"}.
func label(key, name string) string {
	_, labels, _ := strings.Cut(key, "{")
	_, rest, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// Minus is what was counted since before (counts that did not change are left out).
func (q Requests) Minus(before Requests) Requests {
	out := Requests{}
	for k, n := range q {
		if n -= before[k]; n != 0 {
			out[k] = n
		}
	}
	return out
}

// Writes is the count of write requests (POST, PATCH and PUT), whatever
// their response code.
func (q Requests) Writes() int64 {
	var n int64
	for k, v := range q {
		if verb, _, _ := strings.Cut(k, " "); verb == "POST" || verb == "PATCH" || verb == "PUT" {
			n += v
		}
	}
	return n
}
