package recorder

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// memExporter keeps what it is given. While gate is set, Export waits on
// it (a collector that does not answer); while fail is set, it fails (a
// collector that is down).
type memExporter struct {
	mu      sync.Mutex
	records []sdklog.Record
	calls   int
	fail    bool
	gate    chan struct{}
}

func (m *memExporter) Export(ctx context.Context, recs []sdklog.Record) error {
	m.mu.Lock()
	gate, fail := m.gate, m.fail
	m.calls++
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail {
		return errors.New("collector unreachable")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range recs {
		m.records = append(m.records, recs[i].Clone())
	}
	return nil
}

func (m *memExporter) Shutdown(context.Context) error   { return nil }
func (m *memExporter) ForceFlush(context.Context) error { return nil }

func (m *memExporter) got() []sdklog.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]sdklog.Record(nil), m.records...)
}

func (m *memExporter) exportCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// attrs reads a record's attributes into a map (string values).
func attrs(r *sdklog.Record) map[string]string {
	out := map[string]string{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		out[string(kv.Key)] = kv.Value.Emit()
		return true
	})
	return out
}

func newTestRecorder(t *testing.T, exp sdklog.Exporter, mod func(*Options)) *Recorder {
	t.Helper()
	o := Options{ReportingController: "example.com/test-controller", ReportingInstance: "test-0", Exporter: exp}
	if mod != nil {
		mod(&o)
	}
	r, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r
}

// testPod is a typed object as a controller holds it: no TypeMeta, so the
// kind comes from the scheme, as client-go's recorders resolve it.
func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42"}}
}

// checkAccounting asserts the Stats identities.
func checkAccounting(t *testing.T, s Stats) {
	t.Helper()
	if s.Calls != s.Accepted+s.Dropped+s.Invalid {
		t.Errorf("calls %d != accepted %d + dropped %d + invalid %d", s.Calls, s.Accepted, s.Dropped, s.Invalid)
	}
	if s.Pending < 0 || s.Accepted != s.Sent+s.FellBack+s.Lost+s.Pending {
		t.Errorf("accepted %d != sent %d + fell back %d + lost %d + pending %d", s.Accepted, s.Sent, s.FellBack, s.Lost, s.Pending)
	}
}
