package eventseriesprocessor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

// clientDeadline is a sender's deadline per attempt: far longer than an
// answer takes that does not wait for the next consumer (microseconds of
// counting), even on a loaded machine under the race detector. A batch
// that waits for the next consumer is refused uncounted when it ends,
// whenever that is. clientBackoff is the sender's pause before it sends
// again (an OTLP exporter's is seconds: shortened, it only makes the tests
// quicker).
const (
	clientDeadline = 3 * time.Second
	clientBackoff  = 10 * time.Millisecond
)

// outage is a next consumer that blocks, as an exporter's full queue does
// (block_on_overflow) while the API server is down: from call from on, a
// call waits for the outage to end, or for its context (then it answers
// the context's error, as that queue does); or, with refuse, that refuses.
// It ends after senders saw endAfter failures while it lasted, or when the
// test ends it.
type outage struct {
	mu       sync.Mutex
	refuse   bool // calls in the outage are refused at once (a persistent queue that cannot write), not held
	from     int  // the first call in the outage, numbered from 1
	calls    int
	endAfter int
	failures int
	began    chan struct{} // closed when a call first waits in it
	ended    chan struct{}
}

func newOutage(from, endAfter int) *outage {
	return &outage{from: from, endAfter: endAfter, began: make(chan struct{}), ended: make(chan struct{})}
}

// wait is what a call to the next consumer does first.
func (o *outage) wait(ctx context.Context) error {
	o.mu.Lock()
	o.calls++
	in := o.calls >= o.from && !closed(o.ended)
	if in && !closed(o.began) {
		close(o.began)
	}
	o.mu.Unlock()
	switch {
	case !in:
		return nil
	case o.refuse:
		return errDiskFull
	}
	select {
	case <-o.ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// senderFailed counts a failure a sender saw; enough of them end the outage.
func (o *outage) senderFailed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !closed(o.began) || closed(o.ended) {
		return
	}
	if o.failures++; o.failures >= o.endAfter {
		close(o.ended)
	}
}

// awaitBegan waits until a call waits in the outage.
func (o *outage) awaitBegan(t testing.TB) {
	t.Helper()
	select {
	case <-o.began:
	case <-time.After(30 * time.Second): // generous: the call is made at once
		t.Fatal("the outage never began")
	}
}

// end ends the outage once it began.
func (o *outage) end(t testing.TB) {
	t.Helper()
	o.awaitBegan(t)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !closed(o.ended) {
		close(o.ended)
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// outageSink is the next consumer in an outage.
type outageSink struct {
	consumertest.LogsSink
	*outage
}

func (s *outageSink) base() *consumertest.LogsSink { return &s.LogsSink }

func (s *outageSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

// sendAsClient sends ld as an OTLP client does: each attempt has a
// deadline, an answer that comes after it is never seen (the client got
// DeadlineExceeded), and the client sends the same payload again after a
// pause, decoded afresh as a receiver does. failed is called after each
// failed attempt.
func sendAsClient(t *testing.T, p *eventSeriesProcessor, ld plog.Logs, failed func()) {
	t.Helper()
	payload, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	for giveUp := time.Now().Add(time.Minute); time.Now().Before(giveUp); time.Sleep(clientBackoff) {
		req, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(payload)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), clientDeadline)
		err = p.ConsumeLogs(ctx, req)
		late := ctx.Err() != nil
		cancel()
		if err == nil && !late {
			return
		}
		require.False(t, consumererror.IsPermanent(err), "a refusal is retryable: %v", err)
		failed()
	}
	t.Fatal("the batch was never taken")
}

// sendScript sends faultScript from senders that behave as OTLP clients,
// whose failures may end the outage o.
func sendScript(t *testing.T, p *eventSeriesProcessor, o *outage) {
	t.Helper()
	for _, ld := range faultScript() {
		sendAsClient(t, p, ld, o.senderFailed)
	}
}

// TestExactSenderDeadlineWhileDownstreamBlocks: the next consumer blocks
// (a full exporter queue, block_on_overflow) from each of its calls in
// turn, the last record of a series among them (A's finished, the flush of
// B), for as long as the senders see one failure, or three. The senders
// are OTLP clients: an answer after their deadline is a failure, and they
// send the same batch again. Every batch is counted once: the final counts
// add up to the occurrences sent, each series is one object, a count never
// goes down, and the occurrences metric is the occurrences sent.
func TestExactSenderDeadlineWhileDownstreamBlocks(t *testing.T) {
	for _, failures := range []int{1, 3} {
		for from := 1; from <= 6; from++ {
			t.Run(fmt.Sprintf("from call %d for %d failures", from, failures), func(t *testing.T) {
				t.Parallel()
				o := newOutage(from, failures)
				sink := &outageSink{outage: o}
				h := newHarnessWith(t, eventTime, time.Now, sink)
				sendScript(t, h.p, o)
				stopped := make(chan error, 1)
				go func() { stopped <- h.p.Shutdown(context.Background()) }()
				o.end(t) // the outage happened, and ends if the senders did not end it
				require.NoError(t, <-stopped)

				d := collect(t, sink)
				d.requireExact(t, faultScriptOccurrences)
				assert.Len(t, d.names, 3, "three series")
				metadatatest.AssertEqualProcessorEventseriesOccurrences(t, h.tel,
					[]metricdata.DataPoint[int64]{{Value: faultScriptOccurrences}}, metricdatatest.IgnoreTimestamp())
			})
		}
	}
}
