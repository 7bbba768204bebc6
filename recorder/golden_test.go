package recorder

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/records.otlp.pb")

// goldenPath holds one OTLP/HTTP request body as the recorder sends it.
// The main module decodes it with the collector's codec
// (internal/k8sevent/recorder_keys_test.go): the check that the records
// decode as the contract says, without a module dependency either way.
var goldenPath = filepath.Join("testdata", "records.otlp.pb")

// TestGoldenRequestIsCurrent: the committed request is what the recorder
// sends today for the two calls below (fixed clock and resource); after a
// deliberate change, go test -run TestGoldenRequestIsCurrent -update.
func TestGoldenRequestIsCurrent(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer hs.Close()
	r, err := New(context.Background(), Options{ReportingController: "example.com/golden", ReportingInstance: "golden-0",
		Protocol: ProtocolHTTP, Endpoint: hs.Listener.Addr().String(), Insecure: true, BatchDelay: time.Hour,
		Resource: resource.NewSchemaless(attribute.String("service.name", "golden"))})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	r.now = func() time.Time { return at }
	pod := testPod("web-1")
	r.LegacyRecorder(nil, "").AnnotatedEventf(pod, map[string]string{"example.com/run": "7"}, corev1.EventTypeWarning, "BackOff", "Back-off %d", 3)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-node-1"}}
	r.EventsRecorder(nil, "").Eventf(pod, node, corev1.EventTypeNormal, "Scheduled", "Binding", "assigned to %s", "node-1")
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(bodies))
	}
	if *update {
		if err := os.WriteFile(goldenPath, bodies[0], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var got, committed collogs.ExportLogsServiceRequest
	if err := proto.Unmarshal(bodies[0], &got); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(want, &committed); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, &committed) {
		t.Errorf("the recorder's request differs from %s (rerun with -update after a deliberate change):\n got %v\nwant %v", goldenPath, &got, &committed)
	}
}
