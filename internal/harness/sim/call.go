package sim

import (
	"context"
	"errors"
	"net"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// call sends a request to a process over the simulated network: the
// caller waits until the answer or its deadline, whichever comes first;
// the process goes on handling the request either way, as a server does
// when its client gave up. The process gets its own copy, as it would
// from the wire.
func call(ctx context.Context, to *process, headers map[string][]string, ld plog.Logs) (plogotlp.ExportResponse, error) {
	wire := plog.NewLogs()
	ld.CopyTo(wire)
	type answer struct {
		resp plogotlp.ExportResponse
		err  error
	}
	done := make(chan answer, 1)
	ctx = client.NewContext(ctx, client.Info{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 40000}}) // as a receiver sees its peer
	go func() {
		resp, err := to.export(ctx, headers, wire)
		done <- answer{resp, err}
	}()
	select {
	case a := <-done:
		return a.resp, a.err
	case <-ctx.Done():
		return plogotlp.NewExportResponse(), status.Error(codes.DeadlineExceeded, ctx.Err().Error())
	}
}

// retryable says whether an OTLP exporter sends a request again after err:
// the gRPC codes the collector's otlp exporter retries, and a connection
// that failed.
func retryable(err error) bool {
	if errors.Is(err, errDown) || errors.Is(err, errCrashed) {
		return true
	}
	st, ok := status.FromError(err)
	if !ok {
		return !consumererror.IsPermanent(err)
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss, codes.ResourceExhausted:
		return true
	}
	return false
}

// asStatus is how an OTLP receiver answers its pipeline's error: a
// permanent one as not to be retried, any other as Unavailable.
func asStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if consumererror.IsPermanent(err) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

func permanent(err error) error { return consumererror.NewPermanent(err) }
