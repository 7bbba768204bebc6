package recorder

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
)

// otlpSink is an OTLP logs service on loopback that keeps the records it
// receives, over gRPC or HTTP, and each request's headers.
type otlpSink struct {
	collogs.UnimplementedLogsServiceServer
	mu      sync.Mutex
	records []*logspb.LogRecord
	headers []http.Header // per request, keys canonical
}

func (s *otlpSink) Export(ctx context.Context, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := http.Header{}
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return s.export(h, req)
}

func (s *otlpSink) export(h http.Header, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = append(s.headers, h)
	for _, rl := range req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			s.records = append(s.records, sl.LogRecords...)
		}
	}
	return &collogs.ExportLogsServiceResponse{}, nil
}

// requests is the headers of each request received so far.
func (s *otlpSink) requests() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *otlpSink) got() []*logspb.LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*logspb.LogRecord(nil), s.records...)
}

// serveGRPC serves the sink on addr ("127.0.0.1:0" for a new port).
func serveGRPC(t *testing.T, sink *otlpSink, addr string) (*grpc.Server, string) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	collogs.RegisterLogsServiceServer(srv, sink)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return srv, lis.Addr().String()
}

// serveHTTP serves the sink as OTLP/HTTP (protobuf) on a new loopback port.
func serveHTTP(t *testing.T, sink *otlpSink) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var msg collogs.ExportLogsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if err != nil || req.URL.Path != "/v1/logs" {
			http.Error(w, fmt.Sprintf("%s: %v", req.URL.Path, err), http.StatusBadRequest)
			return
		}
		_, _ = sink.export(req.Header.Clone(), &msg)
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(hs.Close)
	return hs.Listener.Addr().String()
}

func wireAttrs(r *logspb.LogRecord) map[string]string {
	out := map[string]string{}
	for _, kv := range r.Attributes {
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}

// TestOTLPGRPCFromEnvironmentSurvivesRestart: configured only by the
// OTEL_EXPORTER_OTLP_* variables, the recorder sends over gRPC what the
// contract says, keeps what comes while the collector is gone, and
// delivers it, once, when a collector listens again on the same address.
func TestOTLPGRPCFromEnvironmentSurvivesRestart(t *testing.T) {
	sink := &otlpSink{}
	srv, addr := serveGRPC(t, sink, "127.0.0.1:0")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	r, err := New(context.Background(), Options{ReportingController: "example.com/c", ReportingInstance: "c-0"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	rec := r.EventsRecorder(nil, "")
	for i := range 3 {
		rec.Eventf(testPod("p"), nil, corev1.EventTypeWarning, "BackOff", "Restart", "before %d", i)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sink.got()
	if len(got) != 3 {
		t.Fatalf("%d records, want 3", len(got))
	}
	a := wireAttrs(got[0])
	if got[0].EventName != EventName || got[0].SeverityText != "Warning" || got[0].SeverityNumber != logspb.SeverityNumber_SEVERITY_NUMBER_WARN ||
		got[0].Body.GetStringValue() != "before 0" || a[AttrReason] != "BackOff" || a[AttrAction] != "Restart" || a[AttrObjectName] != "p" ||
		a[AttrReportingInstance] != "c-0" || got[0].TimeUnixNano == 0 {
		t.Errorf("record on the wire: %v", got[0])
	}

	srv.Stop() // the collector goes away
	for i := range 5 {
		rec.Eventf(testPod("p"), nil, corev1.EventTypeWarning, "BackOff", "Restart", "during %d", i)
	}
	waitFor(t, func() bool { return r.Stats().Failures >= 1 })
	serveGRPC(t, sink, addr) // and comes back
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = sink.got()
	for i, want := range []string{"before 0", "before 1", "before 2", "during 0", "during 1", "during 2", "during 3", "during 4"} {
		if i >= len(got) || got[i].Body.GetStringValue() != want {
			t.Fatalf("records %d, record %d: want %q", len(got), i, want)
		}
	}
	if s := r.Stats(); len(got) != 8 || s.Dropped != 0 || s.Sent != 8 {
		t.Errorf("%d records; stats %+v", len(got), s)
	}
}

// TestOTLPHTTPFromOptions: Protocol, Endpoint and Insecure options select
// OTLP/HTTP to a collector on loopback.
func TestOTLPHTTPFromOptions(t *testing.T) {
	sink := &otlpSink{}
	r, err := New(context.Background(), Options{ReportingController: "example.com/c", Protocol: ProtocolHTTP,
		Endpoint: serveHTTP(t, sink), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	r.LegacyRecorder(nil, "").Event(testPod("q"), corev1.EventTypeNormal, "Pulled", "pulled")
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sink.got()
	if len(got) != 1 || got[0].EventName != EventName || wireAttrs(got[0])[AttrSourceComponent] != "example.com/c" {
		t.Fatalf("records %v", got)
	}
}
