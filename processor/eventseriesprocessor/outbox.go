package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/trace"
)

// outbox holds the records decided and not yet taken by the next consumer,
// oldest first. With storage, each batch is also kept marshaled, made
// before the next consumer ever sees it: a batch lent to the next consumer
// may be read or moved by it at any time, so saves never read it. Only the
// records are saved: the callers are of this process.
type outbox struct {
	batches []heldBatch
	saved   [][]byte // with storage: batches[i].logs marshaled
	records int
}

// heldBatch is one batch in the outbox and the caller whose call decided it.
type heldBatch struct {
	logs plog.Logs
	from caller
}

// caller is what the next consumer is told of the ConsumeLogs call that
// decided a batch: who sent it and the trace it is part of. The zero value
// is no caller.
type caller struct {
	info client.Info
	span trace.SpanContext
}

// callerOf is the caller of a ConsumeLogs on ctx.
func callerOf(ctx context.Context) caller {
	return caller{info: client.FromContext(ctx), span: trace.SpanContextFromContext(ctx)}
}

// context is base carrying c's client.Info and span context, and nothing
// else of the caller's context: its deadline and cancellation stay out.
// Base itself when c has neither.
func (c *caller) context(base context.Context) context.Context {
	ctx := base
	if c.info.Addr != nil || c.info.Auth != nil || hasKeys(c.info.Metadata) {
		ctx = client.NewContext(ctx, c.info)
	}
	if c.span.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, c.span)
	}
	return ctx
}

// hasKeys reports whether md holds any key.
func hasKeys(md client.Metadata) bool {
	for range md.Keys() {
		return true
	}
	return false
}

// outboxOf is the outbox of batches as saved; they have no caller.
func outboxOf(batches [][]byte) (outbox, error) {
	var o outbox
	for i, b := range batches {
		ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
		if err != nil {
			return outbox{}, fmt.Errorf("batch %d: %w", i, err)
		}
		o.batches, o.saved = append(o.batches, heldBatch{logs: ld}), append(o.saved, b)
		o.records += ld.LogRecordCount()
	}
	return o, nil
}

func (o *outbox) push(ld plog.Logs, from caller, keep bool) error {
	n := ld.LogRecordCount()
	if n == 0 {
		return nil
	}
	if keep {
		b, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
		if err != nil {
			return fmt.Errorf("marshal %d records: %w", n, err)
		}
		o.saved = append(o.saved, b)
	}
	o.batches = append(o.batches, heldBatch{logs: ld, from: from})
	o.records += n
	return nil
}

func (o *outbox) head() (heldBatch, bool) {
	if len(o.batches) == 0 {
		return heldBatch{}, false
	}
	return o.batches[0], true
}

func (o *outbox) pop(n int) {
	o.batches[0] = heldBatch{}
	o.batches = o.batches[1:]
	if len(o.saved) > 0 {
		o.saved[0] = nil
		o.saved = o.saved[1:]
	}
	o.records -= n
}
