package stormsend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// stream is n occurrences in namespace ns, gap apart in event time, on 3
// pods and 2 reasons: 6 distinct Events, each repeated.
func stream(ns string, n int, gap time.Duration) []storm.Occurrence {
	occs := make([]storm.Occurrence, n)
	for i := range occs {
		pod := fmt.Sprintf("web-%d", i%3)
		reason, typ := "BackOff", "Warning"
		if i%2 == 1 {
			reason, typ = "Pulled", "Normal"
		}
		occs[i] = storm.Occurrence{
			Time: storm.Start.Add(time.Duration(i) * gap), Type: typ, Reason: reason, Note: reason + " of " + pod + " (100%)",
			Regarding:  storm.Ref{Kind: "Pod", Namespace: ns, Name: pod, UID: "uid-" + pod, APIVersion: "v1"},
			Controller: "kubelet", Instance: "node-1",
		}
	}
	return occs
}

// collector is an OTLP logs server on loopback that keeps what it gets.
type collector struct {
	plogotlp.UnimplementedGRPCServer
	mu       sync.Mutex
	requests []plog.Logs
	arrived  []time.Time // when each of requests arrived
	refuse   int         // the first refuse requests get Unavailable
}

func (c *collector) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse > 0 {
		c.refuse--
		return plogotlp.NewExportResponse(), status.Error(codes.Unavailable, "starting")
	}
	ld := plog.NewLogs()
	req.Logs().CopyTo(ld)
	c.requests = append(c.requests, ld)
	c.arrived = append(c.arrived, time.Now())
	return plogotlp.NewExportResponse(), nil
}

func (c *collector) events(t *testing.T) []k8sevent.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []k8sevent.Event
	for _, ld := range c.requests {
		require.LessOrEqual(t, ld.LogRecordCount(), batchSize)
		for i := range ld.ResourceLogs().Len() {
			rl := ld.ResourceLogs().At(i)
			require.Equal(t, 1, rl.ScopeLogs().Len())
			require.Equal(t, 1, rl.ScopeLogs().At(0).LogRecords().Len(), "one ResourceLogs per record")
			ev, problems, found := k8sevent.Decode(rl.Resource(), rl.ScopeLogs().At(0).LogRecords().At(0), k8sevent.DecodeOptions{})
			require.True(t, found)
			require.Zero(t, problems)
			out = append(out, ev)
		}
	}
	return out
}

func startCollector(t *testing.T, c *collector) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	plogotlp.RegisterGRPCServer(srv, c)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func TestOTLPSendsEveryOccurrenceInOrder(t *testing.T) {
	c := &collector{refuse: 2}
	occs := stream("shop", 250, time.Second)
	var progress []Stats
	st, err := OTLP(context.Background(), startCollector(t, c), occs, Options{Progress: func(s Stats) { progress = append(progress, s) }})
	require.NoError(t, err)
	assert.Equal(t, 250, st.Occurrences)
	assert.Equal(t, int64(250), st.Writes)
	assert.Zero(t, st.Failures)
	require.NotEmpty(t, progress)
	assert.Equal(t, st, progress[len(progress)-1], "the last report is the result")

	got := c.events(t)
	require.Len(t, got, len(occs))
	assert.Len(t, c.requests, 3, "batches of 100 after two refused tries")
	for i := range occs {
		want := occs[i].Event()
		assert.Equal(t, want, got[i], "record %d", i)
	}
}

func TestOTLPRestamp(t *testing.T) {
	c := &collector{}
	before := time.Now()
	_, err := OTLP(context.Background(), startCollector(t, c), stream("shop", 5, time.Hour), Options{Restamp: true})
	require.NoError(t, err)
	for _, ev := range c.events(t) {
		assert.False(t, ev.Time.Before(before), ev.Time)
		assert.False(t, ev.Time.After(time.Now()), ev.Time)
	}
}

func TestOTLPPacesAtSpeed(t *testing.T) {
	c := &collector{}
	// 3 occurrences 1 s apart at speed 4: occurrence k is due k*250 ms after
	// the start. A loaded sender may put two that are due into one request,
	// but none may arrive before it is due.
	addr := startCollector(t, c)
	start := time.Now()
	st, err := OTLP(context.Background(), addr, stream("shop", 3, time.Second), Options{Speed: 4})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, st.Elapsed, 500*time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 0
	for i, ld := range c.requests {
		for range ld.LogRecordCount() {
			due := start.Add(time.Duration(k) * 250 * time.Millisecond)
			assert.False(t, c.arrived[i].Before(due), "occurrence %d arrived %s before it was due", k, due.Sub(c.arrived[i]))
			k++
		}
	}
	assert.Equal(t, 3, k, "every occurrence sent")
}

// TestOTLPHolds: a held replay sends nothing from HoldAt on until Hold is
// closed, and the rest keeps its pacing from then: at speed 4, occurrence 3
// (1 s after occurrence 2 in the stream) is due 250 ms after the release.
func TestOTLPHolds(t *testing.T) {
	c := &collector{}
	addr := startCollector(t, c)
	hold := make(chan struct{})
	sent := make(chan int, 100)
	done := make(chan error, 1)
	go func() {
		_, err := OTLP(context.Background(), addr, stream("shop", 4, time.Second), Options{
			Speed: 4, Hold: hold, HoldAt: 3, Progress: func(s Stats) { sent <- s.Occurrences },
		})
		done <- err
	}()
	for n := range sent {
		if n >= 3 {
			require.Equal(t, 3, n, "occurrences sent before the release")
			break
		}
	}
	require.Len(t, c.events(t), 3, "records received before the release")
	released := time.Now()
	close(hold)
	require.NoError(t, <-done)
	require.Len(t, c.events(t), 4, "every occurrence sent after the release")
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.arrived[len(c.arrived)-1]
	assert.False(t, last.Before(released.Add(250*time.Millisecond)), "the last occurrence arrived %v after the release", last.Sub(released))
}

func TestOTLPBounds(t *testing.T) {
	c := &collector{}
	addr := startCollector(t, c)
	st, err := OTLP(context.Background(), addr, stream("shop", 50, time.Second), Options{MaxEvents: 7})
	require.NoError(t, err)
	assert.Equal(t, 7, st.Occurrences)
	assert.Len(t, c.events(t), 7)

	// An hour of stream in real time, bounded to 300 ms: an expected end.
	st, err = OTLP(context.Background(), addr, stream("shop", 3600, time.Second), Options{Speed: 1, MaxDuration: 300 * time.Millisecond})
	require.NoError(t, err)
	assert.Positive(t, st.Occurrences)
	assert.Less(t, st.Occurrences, 3600)
	assert.GreaterOrEqual(t, st.Elapsed, 300*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	st, err = OTLP(ctx, addr, stream("shop", 3600, time.Second), Options{Speed: 1})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, st.Occurrences, 3600)

	_, err = OTLP(context.Background(), addr, nil, Options{Speed: -1})
	require.ErrorContains(t, err, "speed")
	_, err = OTLP(context.Background(), addr, nil, Options{MaxEvents: -1})
	require.ErrorContains(t, err, "max events")
	_, err = OTLP(context.Background(), addr, nil, Options{HoldAt: -1})
	require.ErrorContains(t, err, "hold at")
}

func TestOTLPFailsWhenNobodyListens(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	// MaxDuration cuts the retries short.
	st, err := OTLP(context.Background(), addr, stream("shop", 10, 0), Options{MaxDuration: time.Second})
	require.Error(t, err)
	var s interface{ GRPCStatus() *status.Status }
	require.True(t, errors.As(err, &s), err)
	assert.Equal(t, codes.Unavailable, s.GRPCStatus().Code())
	assert.Equal(t, int64(10), st.Failures)
	assert.Zero(t, st.Writes)
}
