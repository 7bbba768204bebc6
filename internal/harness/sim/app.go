package sim

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// SenderMode is how an app's OTLP exporter retries a request that failed.
type SenderMode int

const (
	// SenderGivesUp retries as the collector's otlp exporter does by
	// default: backoff from 5 s to 30 s, for at most 5 minutes.
	SenderGivesUp SenderMode = iota
	// SenderForever retries until the request is taken.
	SenderForever
	// SenderOnce never retries.
	SenderOnce
)

// app is an application sending its Events as OTLP records, with its
// ServiceAccount's token, to one process; one request at a time, in order,
// as an SDK's batch processor exports.
type app struct {
	w       *World
	name    string
	token   string
	target  string
	mode    SenderMode
	timeout time.Duration

	queue chan appRequest
	done  chan struct{}
}

// appRequest is one request and the keys of its records, in order.
type appRequest struct {
	ld   plog.Logs
	keys []seriesKey
}

func newApp(w *World, name, target string, mode SenderMode) *app {
	a := &app{w: w, name: name, token: appToken(name), target: target, mode: mode, timeout: 5 * time.Second,
		queue: make(chan appRequest, 1024), done: make(chan struct{})}
	go a.run()
	return a
}

// send queues a request of records, each one occurrence.
func (a *app) send(evs []k8sevent.Event) {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	req := appRequest{ld: ld}
	for i := range evs {
		k8sevent.Encode(&evs[i], lrs.AppendEmpty())
		k := seriesKey{Namespace: evs[i].Regarding.Namespace, Kind: evs[i].Regarding.Kind, Name: evs[i].Regarding.Name, Reason: evs[i].Reason,
			Controller: evs[i].ReportingController}
		req.keys = append(req.keys, k)
		a.w.ledger.sent(k, time.Now())
	}
	a.queue <- req
}

// finish lets the app send what it queued, then stop.
func (a *app) finish() { close(a.queue) }

// close waits until the app stopped.
func (a *app) close() { <-a.done }

func (a *app) run() {
	defer close(a.done)
	for req := range a.queue {
		a.deliver(req)
	}
}

// deliver sends a request until it is taken, refused for good, or the
// sender gives up, and notes the outcome of its records.
func (a *app) deliver(req appRequest) {
	headers := map[string][]string{"authorization": {"Bearer " + a.token}}
	start := time.Now()
	wait := 5 * time.Second
	for {
		ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
		resp, err := call(ctx, a.w.procs[a.target], headers, req.ld)
		cancel()
		switch {
		case err == nil:
			a.w.logf("app %s: request of %d records taken (%d rejected)", a.name, len(req.keys), resp.PartialSuccess().RejectedLogRecords())
			a.taken(req, int(resp.PartialSuccess().RejectedLogRecords()))
			return
		case !retryable(err):
			a.w.logf("app %s: request of %d records refused for good: %v", a.name, len(req.keys), err)
			a.outcome(req, 0, 0, len(req.keys))
			return
		case a.mode == SenderOnce || a.mode == SenderGivesUp && time.Since(start)+wait > 5*time.Minute:
			a.w.logf("app %s: gave up on a request of %d records: %v", a.name, len(req.keys), err)
			a.outcome(req, 0, len(req.keys), 0)
			return
		}
		a.w.logf("app %s: request of %d records failed, retried in %s: %v", a.name, len(req.keys), wait, err)
		time.Sleep(wait)
		wait = min(wait*3/2, 30*time.Second)
	}
}

// taken notes a request the receiver took, rejected records aside (OTLP
// partial success does not say which: with any, each record of the
// request is counted at most once, not exactly once).
func (a *app) taken(req appRequest, rejected int) {
	if rejected == 0 {
		a.outcome(req, len(req.keys), 0, 0)
		return
	}
	a.w.logf("app %s: %d of %d records rejected", a.name, rejected, len(req.keys))
	a.w.ledger.reject(a.name, rejected)
	a.outcome(req, 0, len(req.keys), 0)
}

func (a *app) outcome(req appRequest, taken, unknown, refused int) {
	for i, k := range req.keys {
		switch {
		case i < taken:
			a.w.ledger.answered(k, 1, 0, 0)
		case i < taken+unknown:
			a.w.ledger.answered(k, 0, 1, 0)
		default:
			a.w.ledger.answered(k, 0, 0, 1)
		}
	}
}

func (a *app) String() string { return fmt.Sprintf("app %s -> %s", a.name, a.target) }
