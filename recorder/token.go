package recorder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// DefaultTokenFile is where the pod spec in the README projects the pod's
// ServiceAccount token for the collector's audience.
const DefaultTokenFile = "/var/run/secrets/k8sevents/token"

// NoToken as Options.TokenFile sends no token, whatever files exist.
const NoToken = "-"

// tokenExporter is the OTLP exporter with the pod's projected
// ServiceAccount token as its bearer token (`authorization: Bearer ...`).
//
// It reads the file before every export request. When the content changed
// (kubelet rewrote it: it does so at 80% of the token's lifetime), it builds
// a new SDK exporter with the new header and shuts the old one down, so no
// request goes out with an older token than the file holds. Rebuilding
// rather than wrapping the transport keeps the rest of the SDK's
// configuration (TLS, compression, timeout from the environment) as it is.
// While the file is absent or empty, requests go without a token; that is
// reported once each time it goes missing, to the OpenTelemetry error
// handler (stderr unless the app set one).
type tokenExporter struct {
	path  string
	build func(headers map[string]string) (sdklog.Exporter, error)
	base  map[string]string // headers from OTEL_EXPORTER_OTLP_[LOGS_]HEADERS

	mu      sync.Mutex // Export and Shutdown may come from different goroutines
	exp     sdklog.Exporter
	token   string
	missing bool // the last read found no token, and that was reported
}

var _ sdklog.Exporter = (*tokenExporter)(nil)

// newTokenExporter reads the token once and builds the first exporter, so
// that a configuration error shows in New.
func newTokenExporter(path string, build func(map[string]string) (sdklog.Exporter, error)) (*tokenExporter, error) {
	t := &tokenExporter{path: path, build: build, base: envHeaders()}
	if err := t.refresh(context.Background()); err != nil {
		return nil, err
	}
	return t, nil
}

// Export sends the records with the token the file holds now.
func (t *tokenExporter) Export(ctx context.Context, records []sdklog.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.refresh(ctx); err != nil {
		return fmt.Errorf("exporter for the token of %s: %w", t.path, err)
	}
	return t.exp.Export(ctx, records)
}

// refresh reads the token and, when it is not the current exporter's,
// replaces the exporter.
func (t *tokenExporter) refresh(ctx context.Context) error {
	tok := t.read()
	if t.exp != nil && tok == t.token {
		return nil
	}
	headers := t.base
	if tok != "" {
		headers = withBearer(t.base, tok)
	}
	exp, err := t.build(headers)
	if err != nil {
		return err
	}
	if t.exp != nil {
		if err := t.exp.Shutdown(ctx); err != nil {
			otel.Handle(fmt.Errorf("recorder: shut down the exporter of the previous token: %w", err))
		}
	}
	t.exp, t.token = exp, tok
	return nil
}

// read is the file's token, or "" when there is none.
func (t *tokenExporter) read() string {
	b, err := os.ReadFile(t.path)
	tok := strings.TrimSpace(string(b))
	if err == nil && tok != "" {
		t.missing = false
		return tok
	}
	if !t.missing {
		t.missing = true
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err = fmt.Errorf("recorder: no ServiceAccount token at %s: sending without one (mount the projected token, or set TokenFile)", t.path)
		case err != nil:
			err = fmt.Errorf("recorder: read the ServiceAccount token: %w: sending without one", err)
		default:
			err = fmt.Errorf("recorder: the ServiceAccount token file %s is empty: sending without one", t.path)
		}
		otel.Handle(err)
	}
	return ""
}

// ForceFlush flushes the current exporter (the recorder's own exporters
// hold nothing).
func (t *tokenExporter) ForceFlush(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exp.ForceFlush(ctx)
}

// Shutdown shuts the current exporter down.
func (t *tokenExporter) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exp.Shutdown(ctx)
}

// withBearer is headers with the token as the authorization header, which
// replaces one from the environment (any spelling).
func withBearer(headers map[string]string, token string) map[string]string {
	out := make(map[string]string, len(headers)+1)
	for k, v := range headers {
		if !strings.EqualFold(k, "authorization") {
			out[k] = v
		}
	}
	out["authorization"] = "Bearer " + token
	return out
}

// envHeaders reads the headers the SDK exporters read from the environment,
// because an exporter given headers as an option ignores those variables.
// Same rules as the SDK's: OTEL_EXPORTER_OTLP_LOGS_HEADERS, else
// OTEL_EXPORTER_OTLP_HEADERS; comma-separated key=value, values URL-encoded;
// a variable with a malformed entry is reported and passed over.
func envHeaders() map[string]string {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
		if s := os.Getenv(name); s != "" {
			h, err := parseHeaders(s)
			if err == nil {
				return h
			}
			otel.Handle(fmt.Errorf("invalid %s value %s: %w", name, s, err))
		}
	}
	return nil
}

func parseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		val, err := url.PathUnescape(v)
		if !ok || !isHeaderKey(k) || err != nil {
			return nil, fmt.Errorf("header %q: want key=url-encoded-value", kv)
		}
		out[k] = strings.TrimSpace(val)
	}
	return out, nil
}

// isHeaderKey: an HTTP token (RFC 9110), as the SDK checks it.
func isHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		ok := c < utf8.RuneSelf && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c))
		if !ok {
			return false
		}
	}
	return true
}
