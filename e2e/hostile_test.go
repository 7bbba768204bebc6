package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	grpcgzip "google.golang.org/grpc/encoding/gzip" // registers the gzip compressor
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestHostileNestedPayload: an attribute nested 2,000,000 levels deep (19 MB
// of protobuf, under the OTLP receiver's default 20 MiB HTTP body limit)
// overflows the stack of pdata's recursive unmarshal and kills the
// collector (collector issue 15301). The ready ingestion config caps a
// request at 1 MiB decompressed: the payload is refused over gRPC and HTTP,
// plain and gzipped (gzipped it is still about 7 MB: each level's length
// prefix differs, so it is refused on its compressed size too); a nesting just under the
// cap is refused for its depth, unread by pdata; the collector stays up, its peak RSS stays under 512 MB,
// and a good record sent afterwards becomes its Event. The nested payload
// never reaches the decompression cap (refused on its compressed size), so
// a second one tests that cap alone: a record whose attribute is 3 MiB of
// one byte, 3 KB gzipped, refused over gRPC and HTTP once decompressed.
// Without the cap (the receivers' defaults: gRPC 4 MiB, HTTP 20 MiB) it
// is taken, and the test fails.
func TestHostileNestedPayload(t *testing.T) {
	parallel(t)
	binary(t)
	srv := kubetest.Start(t)
	grpcAddr, httpAddr := loopback(t), loopback(t)
	const controller = "k8sevents.io/e2e-hostile"
	acc := newTierAccess(t, srv) // a token that may create Events: the payloads get past authentication
	c := startCollectorEnv(t, t.TempDir(), readyConfig(t, "otlp-ingestion.yaml"), append([]string{
		"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + srv.Kubeconfig(t),
		"OTLP_GRPC_ENDPOINT=" + grpcAddr, "OTLP_HTTP_ENDPOINT=" + httpAddr,
		"REPORTING_CONTROLLER=" + controller,
	}, acc.ingestEnv()...))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ctx = acc.withToken(ctx)

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()

	bomb := bombLogsRequest(t, 3<<20)
	bombGz := gzipped(t, bomb)
	t.Logf("compressible payload: %d bytes, %d gzipped", len(bomb), len(bombGz))
	require.Greater(t, len(bomb), 1<<20, "over the cap decompressed")
	require.Less(t, len(bombGz), 64<<10, "far under the cap compressed")
	require.Error(t, exportRaw(ctx, conn, bomb, grpc.UseCompressor("gzip")), "grpc+gzip: over the cap once decompressed")
	require.NotZero(t, requireRefusedHTTP(ctx, t, httpAddr, acc.token, bomb, true), "http+gzip: a 4 KB body is read and answered, not cut off")
	requireRunning(t, c)

	deep := nestedLogsRequest(2_000_000)
	require.Greater(t, len(deep), 19<<20-1<<20, "the payload of the report")
	require.Error(t, exportRaw(ctx, conn, deep), "grpc: over the cap")
	require.Error(t, exportRaw(ctx, conn, deep, grpc.UseCompressor("gzip")), "grpc+gzip: over the cap once decompressed")
	requireRefusedHTTP(ctx, t, httpAddr, acc.token, deep, false)
	requireRefusedHTTP(ctx, t, httpAddr, acc.token, deep, true)
	requireRunning(t, c)

	under := nestedLogsRequest(100_000)
	require.Less(t, len(under), 1<<20)
	require.Equal(t, codes.InvalidArgument, status.Code(exportRaw(ctx, conn, under)), "under the size cap, too deep: refused before pdata decodes it")

	requireRunning(t, c)
	rss, err := c.PeakRSS()
	require.NoError(t, err)
	t.Logf("collector peak RSS after the hostile payloads: %d MB", rss>>20)
	require.Less(t, rss, int64(512<<20), "peak RSS")

	// The pipeline still works: a good record becomes an Event.
	good := plog.NewLogs()
	ev := k8sevent.Event{Reason: "Started", Note: "after the hostile payloads", Type: k8sevent.TypeNormal, Time: time.Now(),
		Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: "default", Name: "survivor", UID: "u-survivor"}}
	k8sevent.Encode(&ev, good.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(good))
	require.NoError(t, err)
	eventually(t, time.Minute, func() (bool, string) {
		evs, err := listEvents(ctx, srv.Clientset(), byController(controller))
		if err != nil || len(evs) != 1 {
			return false, fmt.Sprintf("events of %s: %d (%v)", controller, len(evs), err)
		}
		return evs[0].InvolvedObject.Name == "survivor", "regarding " + evs[0].InvolvedObject.Name
	})
}

func requireRunning(t *testing.T, c *collector) {
	t.Helper()
	exited, err := c.Exited()
	require.False(t, exited, "the collector died: %v\n%s", err, c.LogTail(2048))
}

// rawCodec sends bytes as they are: the test's payload is protobuf that
// pdata itself could not marshal (its marshaler recurses too).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

var _ encoding.Codec = rawCodec{}

// The gzipped hostile payloads are compressed at gzip.BestSpeed: the
// default level takes about twice as long for the 19 MB payload, and what
// the test checks is the collector's decompression, which is the same for
// both (6.97 MB compressed instead of 6.80 MB).
func init() {
	if err := grpcgzip.SetLevel(gzip.BestSpeed); err != nil {
		panic(err)
	}
}

func exportRaw(ctx context.Context, conn *grpc.ClientConn, req []byte, opts ...grpc.CallOption) error {
	var resp []byte
	opts = append(opts, grpc.ForceCodec(rawCodec{}))
	return conn.Invoke(ctx, "/opentelemetry.proto.collector.logs.v1.LogsService/Export", req, &resp, opts...)
}

func gzipped(t *testing.T, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	require.NoError(t, err)
	_, err = w.Write(body)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// bombLogsRequest is an ExportLogsServiceRequest of one Event record with
// an attribute of size bytes of one letter: it compresses to almost
// nothing.
func bombLogsRequest(t *testing.T, size int) []byte {
	t.Helper()
	ld := plog.NewLogs()
	ev := k8sevent.Event{Reason: "Bomb", Note: "compressible", Type: k8sevent.TypeNormal, Time: time.Now(),
		Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: "default", Name: "bomb", UID: "u-bomb"}}
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	k8sevent.Encode(&ev, lr)
	lr.Attributes().PutStr("app.payload", strings.Repeat("x", size))
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	require.NoError(t, err)
	return b
}

// requireRefusedHTTP sends body with token and requires it refused, and
// not for the token: an answer of 400 or more but 401 (its status is
// returned), or the connection closed (0).
func requireRefusedHTTP(ctx context.Context, t *testing.T, addr, token string, body []byte, gz bool) int {
	t.Helper()
	if gz {
		body = gzipped(t, body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/logs", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil { // the server may also close the connection on an oversized body
		return 0
	}
	resp.Body.Close()
	require.GreaterOrEqual(t, resp.StatusCode, 400, "http (gzip %v): %s", gz, resp.Status)
	require.NotEqual(t, http.StatusUnauthorized, resp.StatusCode, "refused for its size, not its token")
	return resp.StatusCode
}

// nestedLogsRequest is an ExportLogsServiceRequest of one record whose one
// attribute nests depth array values, built in linear time (sizes inside
// out, then bytes outside in).
func nestedLogsRequest(depth int) []byte {
	leaf := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("x")) // AnyValue.string_value
	inner := make([]int, depth+1)                                                                // size of the AnyValue inside level i
	arr := make([]int, depth)                                                                    // size of level i's ArrayValue
	inner[0] = len(leaf)
	for i := range depth {
		arr[i] = protowire.SizeTag(1) + protowire.SizeBytes(inner[i])
		inner[i+1] = protowire.SizeTag(5) + protowire.SizeBytes(arr[i])
	}
	value := make([]byte, 0, inner[depth])
	for i := depth - 1; i >= 0; i-- {
		value = protowire.AppendVarint(protowire.AppendTag(value, 5, protowire.BytesType), uint64(arr[i]))   // AnyValue.array_value
		value = protowire.AppendVarint(protowire.AppendTag(value, 1, protowire.BytesType), uint64(inner[i])) // ArrayValue.values
	}
	value = append(value, leaf...)
	wrap := func(field protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, field, protowire.BytesType), b)
	}
	kv := append(wrap(1, []byte("k")), wrap(2, value)...) // KeyValue{key, value}
	return wrap(1, wrap(2, wrap(2, wrap(6, kv))))         // request.resource_logs.scope_logs.log_records.attributes
}

// BenchmarkHostileFieldsPeakRSS feeds the built collector (the ready
// ingestion config, defaults) 6,000 records whose fields are 100 KB each:
// a note, a reason, an action, a non-contract attribute, and, on every
// third record, the regarding kind, all distinct, one record per
// request (the 1 MiB cap), and reports the collector's peak RSS once
// the processor has seen them all. Goal: under 512 MB (58 MB at rest).
func BenchmarkHostileFieldsPeakRSS(b *testing.B) {
	binary(b)
	for range b.N {
		peak := hostileFieldsRun(b, 6000)
		b.ReportMetric(float64(peak>>20), "peak-RSS-MB")
	}
}

func hostileFieldsRun(b *testing.B, records int) int64 {
	srv := kubetest.Start(b)
	grpcAddr := loopback(b)
	acc := newTierAccess(b, srv)
	c := startCollectorEnv(b, b.TempDir(), readyConfig(b, "otlp-ingestion.yaml"), append([]string{
		"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + srv.Kubeconfig(b),
		"OTLP_GRPC_ENDPOINT=" + grpcAddr, "OTLP_HTTP_ENDPOINT=" + loopback(b),
	}, acc.ingestEnv()...))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ctx = acc.withToken(ctx)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer conn.Close()
	client := plogotlp.NewGRPCClient(conn)
	huge := func(tag string, i int) string { return tag + strconv.Itoa(i) + strings.Repeat("x", 100<<10) }
	const perRequest = 1 // a record holds up to 500 KB; the cap is 1 MiB
	for i := 0; i < records; i += perRequest {
		ld := plog.NewLogs()
		for j := i; j < i+perRequest && j < records; j++ {
			ev := k8sevent.Event{Reason: huge("r", j), Action: huge("a", j), Note: huge("n", j), Type: k8sevent.TypeWarning,
				Time: time.Now(), Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("pod-%d", j)}}
			if j%3 == 0 {
				ev.Regarding.Kind = huge("k", j)
			}
			lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			k8sevent.Encode(&ev, lr)
			lr.Attributes().PutStr("app.payload", huge("p", j))
		}
		_, err := client.Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		require.NoError(b, err, "request %d", i/perRequest)
	}
	eventually(b, 5*time.Minute, func() (bool, string) {
		seen := c.scrape(b).Sum("otelcol_processor_incoming_items")
		return seen >= float64(records), fmt.Sprintf("processor saw %.0f of %d", seen, records)
	})
	peak, err := c.PeakRSS()
	require.NoError(b, err)
	return peak
}
