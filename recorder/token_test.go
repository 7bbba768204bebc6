package recorder

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	corev1 "k8s.io/api/core/v1"
)

// projectedToken lays out a token the way kubelet's atomic writer does a
// projected volume: the file is a symlink through ..data to a timestamped
// directory, and an update swaps ..data in one rename.
type projectedToken struct {
	dir string
	n   int
}

func (p *projectedToken) path() string { return filepath.Join(p.dir, "token") }

func (p *projectedToken) write(t *testing.T, token string) {
	t.Helper()
	p.n++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d", p.n)
	if err := os.Mkdir(filepath.Join(p.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, ts, "token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(p.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(p.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if p.n == 1 {
		if err := os.Symlink(filepath.Join("..data", "token"), p.path()); err != nil {
			t.Fatal(err)
		}
	}
}

// sendOne records one event and waits until it is sent: one request.
func sendOne(t *testing.T, r *Recorder, note string) {
	t.Helper()
	r.EventsRecorder(nil, "").Eventf(testPod("p"), nil, corev1.EventTypeNormal, "Pulled", "Pull", "%s", note)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestTokenSentAndReadAgainAfterRotation: over gRPC and HTTP, every request
// carries the projected token as a bearer token, next to the headers of
// OTEL_EXPORTER_OTLP_HEADERS (whose own authorization it replaces); once
// kubelet has swapped the file, the very next request carries the new one.
func TestTokenSentAndReadAgainAfterRotation(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=t%201,authorization=Basic%20eA==")
	for _, proto := range []string{ProtocolGRPC, ProtocolHTTP} {
		t.Run(proto, func(t *testing.T) {
			sink := &otlpSink{}
			var endpoint string
			if proto == ProtocolGRPC {
				_, endpoint = serveGRPC(t, sink, "127.0.0.1:0")
			} else {
				endpoint = serveHTTP(t, sink)
			}
			tok := &projectedToken{dir: t.TempDir()}
			tok.write(t, "token-1\n")
			r, err := New(context.Background(), Options{ReportingController: "example.com/c", Protocol: proto,
				Endpoint: endpoint, Insecure: true, TokenFile: tok.path()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Shutdown(context.Background())

			sendOne(t, r, "first")
			sendOne(t, r, "second")
			tok.write(t, "token-2")
			sendOne(t, r, "after rotation")

			want := []string{"Bearer token-1", "Bearer token-1", "Bearer token-2"}
			reqs := sink.requests()
			if len(reqs) != len(want) || len(sink.got()) != len(want) {
				t.Fatalf("%d requests, %d records: want %d each", len(reqs), len(sink.got()), len(want))
			}
			for i, h := range reqs {
				if got := h.Values("Authorization"); len(got) != 1 || got[0] != want[i] {
					t.Errorf("request %d: authorization %q, want %q", i, got, want[i])
				}
				if got := h.Get("X-Tenant"); got != "t 1" {
					t.Errorf("request %d: x-tenant %q, want the environment's %q", i, got, "t 1")
				}
			}
		})
	}
}

// errorLog captures what the OpenTelemetry error handler is told.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Handle(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, err.Error())
}

func (l *errorLog) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// TestTokenAbsentSendsWithoutAndSaysSoOnce: with no file, requests go
// without an authorization header and the records are delivered; the
// missing file is reported once, not per request. A file that appears is
// used from the next request on; one that goes away again is reported
// again.
func TestTokenAbsentSendsWithoutAndSaysSoOnce(t *testing.T) {
	log := &errorLog{}
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(log)
	t.Cleanup(func() { otel.SetErrorHandler(prev) })

	sink := &otlpSink{}
	_, endpoint := serveGRPC(t, sink, "127.0.0.1:0")
	tok := &projectedToken{dir: t.TempDir()}
	r, err := New(context.Background(), Options{ReportingController: "example.com/c", Protocol: ProtocolGRPC,
		Endpoint: endpoint, Insecure: true, TokenFile: tok.path()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	const missing = "no ServiceAccount token at " // the message's start

	for i := range 3 {
		sendOne(t, r, fmt.Sprint("absent ", i))
	}
	tok.write(t, "token-1")
	sendOne(t, r, "present")
	if err := os.Remove(tok.path()); err != nil {
		t.Fatal(err)
	}
	sendOne(t, r, "gone")

	want := []string{"", "", "", "Bearer token-1", ""}
	reqs := sink.requests()
	if len(reqs) != len(want) || len(sink.got()) != len(want) {
		t.Fatalf("%d requests, %d records: want %d each", len(reqs), len(sink.got()), len(want))
	}
	for i, h := range reqs {
		if got := h.Get("Authorization"); got != want[i] {
			t.Errorf("request %d: authorization %q, want %q", i, got, want[i])
		}
	}
	if n := log.count(missing); n != 2 {
		t.Errorf("missing token reported %d times, want 2 (once per absence): %q", n, log.msgs)
	}
}

// TestEnvHeadersAsTheSDKReadsThem: the headers the recorder passes to the
// exporter next to its token are those the SDK's own exporter reads from
// the environment when left alone (TokenFile NoToken), for well-formed and
// malformed variables alike.
func TestEnvHeadersAsTheSDKReadsThem(t *testing.T) {
	tok := &projectedToken{dir: t.TempDir()}
	tok.write(t, "token-1")
	for _, c := range []struct{ logs, all string }{
		{"", "a=1,b=x%20y"},
		{" k = v ,k2=", ""},
		{"a=1", "b=2"},           // the logs variable wins whole
		{"bad", "b=2"},           // a malformed logs variable falls back to the general one
		{"a=1,b c=2", ""},        // a key that is no HTTP token
		{"a=%zz", "c=%E2%9C%93"}, // a value that does not unescape
	} {
		t.Run(c.logs+"|"+c.all, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_LOGS_HEADERS", c.logs)
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", c.all)
			var got [2]http.Header
			for i, file := range []string{NoToken, tok.path()} {
				sink := &otlpSink{}
				r, err := New(context.Background(), Options{ReportingController: "example.com/c", Protocol: ProtocolHTTP,
					Endpoint: serveHTTP(t, sink), Insecure: true, TokenFile: file})
				if err != nil {
					t.Fatal(err)
				}
				sendOne(t, r, "x")
				if err := r.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				got[i] = sink.requests()[0]
				got[i].Del("Content-Length")
			}
			if a := got[1].Get("Authorization"); a != "Bearer token-1" {
				t.Errorf("authorization %q", a)
			}
			got[1].Del("Authorization")
			if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
				t.Errorf("headers\nSDK alone:  %v\nwith token: %v", got[0], got[1])
			}
		})
	}
}
