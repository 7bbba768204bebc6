package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"context"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// exportMethod is OTLP's logs Export over gRPC.
const exportMethod = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"

// logsService is OTLP's logs service, registered here instead of with
// plogotlp.RegisterGRPCServer: gRPC's generated handlers decode a request
// before any interceptor, the authenticator's included, runs. This one
// hands the interceptors nothing, and reads and decodes the request only
// in the innermost handler, once the caller was authenticated.
var logsService = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.logs.v1.LogsService",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: exportHandler}},
	Metadata:    "opentelemetry/proto/collector/logs/v1/logs_service.proto",
}

// exportHandler runs the server's interceptors (configgrpc's: client
// information, then the authenticator) around the request's reading and
// decoding; the request they are handed is nil.
func exportHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	r := srv.(*otlpReceiver)
	handle := func(ctx context.Context, _ any) (any, error) {
		var raw rawMessage
		if err := dec(&raw); err != nil { // reads the message: no decoding
			return nil, err
		}
		req, err := r.decode(ctx, protobufType, raw)
		if err != nil {
			return nil, err
		}
		resp, err := r.Export(ctx, req)
		if err != nil {
			return nil, err
		}
		out, err := resp.MarshalProto()
		if err != nil {
			return nil, status.Error(codes.Internal, "encode response: "+err.Error())
		}
		msg := rawMessage(out)
		return &msg, nil
	}
	if interceptor == nil {
		return handle(ctx, nil)
	}
	return interceptor(ctx, nil, &grpc.UnaryServerInfo{Server: srv, FullMethod: exportMethod}, handle)
}

// rawMessage is a protobuf message as bytes: pdata's gRPC codec (the
// "proto" codec it registers) copies a request into it and writes a
// response from it unchanged.
type rawMessage []byte

func (m rawMessage) SizeProto() int            { return len(m) }
func (m rawMessage) MarshalProto(b []byte) int { return copy(b, m) }
func (m *rawMessage) UnmarshalProto(b []byte) error {
	*m = append((*m)[:0], b...) // b is the codec's pooled buffer
	return nil
}

// requireBearer refuses, at a stream's headers, a call that carries no
// bearer token: nothing of its message is read. The authenticator checks
// the token itself later; this only keeps a caller that has none from
// costing more than its headers.
func (r *otlpReceiver) requireBearer(ctx context.Context, info *tap.Info) (context.Context, error) {
	for _, v := range info.Header.Get("authorization") {
		if scheme, token, ok := strings.Cut(strings.TrimSpace(v), " "); ok && strings.EqualFold(scheme, "bearer") && strings.TrimSpace(token) != "" {
			return ctx, nil
		}
	}
	r.refusedRequest(ctx, reasonNoToken)
	return ctx, status.Error(codes.Unauthenticated, "k8seventsotlp: no bearer token (authorization: Bearer <ServiceAccount token>)")
}

// decode checks a request's nesting without recursion and, within one of
// the receiver's decode slots (shared by every connection and both
// protocols), decodes it.
func (r *otlpReceiver) decode(ctx context.Context, enc string, raw []byte) (plogotlp.ExportRequest, error) {
	req := plogotlp.NewExportRequest()
	check := checkProtoDepth
	if enc == jsonType {
		check = checkJSONDepth
	}
	if err := check(raw); err != nil {
		r.refusedRequest(ctx, reasonTooDeep)
		return req, status.Error(codes.InvalidArgument, "k8seventsotlp: "+err.Error())
	}
	select {
	case r.decodes <- struct{}{}:
	case <-ctx.Done():
		return req, status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-r.decodes }()
	var err error
	if enc == jsonType {
		err = req.UnmarshalJSON(raw)
	} else {
		err = req.UnmarshalProto(raw)
	}
	if err != nil {
		return req, status.Error(codes.InvalidArgument, "decode request: "+err.Error())
	}
	return req, nil
}
