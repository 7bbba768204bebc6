package stormsend

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/k8sevents/otel-k8sevents/internal/ctxwait"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

const (
	batchSize     = 100
	exportTimeout = 30 * time.Second
	// exportTries and maxBackoff: from 100 ms, doubling to 2 s: about two
	// minutes of retries, within the replay's deadline. A collector that
	// restarts refuses a request until it is back (tier 1 holds nothing
	// for a tier-2 pod that is away), as an app's OTLP exporter retries it.
	exportTries = 64
	maxBackoff  = 2 * time.Second
)

// OTLP sends the occurrences as OTLP logs over gRPC to endpoint
// (host:port), plaintext unless opts.Credentials says otherwise, with the
// outgoing metadata of ctx (a bearer token), encoded per the log-record contract, one ResourceLogs per
// record as contrib's k8s_events receiver sends them, at most 100 records a
// request, in stream order. A request the collector refuses for a passing
// reason (unavailable, resource exhausted) is retried with backoff; one
// that still fails ends the replay with an error.
func OTLP(ctx context.Context, endpoint string, occs []storm.Occurrence, opts Options) (Stats, error) {
	r, err := newReplay(occs, opts)
	if err != nil {
		return Stats{}, err
	}
	creds := opts.Credentials
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(creds))
	if err != nil {
		return r.finish(ctx, fmt.Errorf("otlp endpoint %s: %w", endpoint, err))
	}
	defer conn.Close()
	client := plogotlp.NewGRPCClient(conn)
	for i := 0; i < len(r.occs); {
		if err := r.wait(ctx, i); err != nil {
			return r.finish(ctx, err)
		}
		// One request takes what is due now, so that pacing holds while a
		// fast replay still sends full batches.
		ld := plog.NewLogs()
		now, j := time.Now(), i
		for ; j < len(r.occs) && j-i < batchSize && (j == i || !r.due(j).After(now) && !r.holds(j)); j++ {
			ev := r.occs[j].Event()
			ev.Time = r.stamp(ev.Time)
			k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		}
		r.c.occurrences.Add(int64(j - i))
		if err := r.export(ctx, client, ld); err != nil {
			return r.finish(ctx, fmt.Errorf("otlp endpoint %s: %w", endpoint, err))
		}
		i = j
	}
	return r.finish(ctx, nil)
}

func (r *replay) export(ctx context.Context, client plogotlp.GRPCClient, ld plog.Logs) error {
	n := int64(ld.LogRecordCount())
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		callCtx, cancel := context.WithTimeout(ctx, exportTimeout)
		resp, err := client.Export(callCtx, plogotlp.NewExportRequestFromLogs(ld))
		cancel()
		if err == nil {
			rejected := min(max(resp.PartialSuccess().RejectedLogRecords(), 0), n)
			r.c.writes.Add(n - rejected)
			r.c.failures.Add(rejected)
			return nil
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
			if try < exportTries && ctx.Err() == nil && time.Now().Add(backoff).Before(r.deadline) {
				if ctxwait.Sleep(ctx, backoff) == nil {
					backoff = min(2*backoff, maxBackoff)
					continue
				}
			}
		}
		r.c.failures.Add(n)
		return fmt.Errorf("export of %d records (try %d): %w", n, try, err)
	}
}
