package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"io"
	"mime"
	"net/http"
	"strconv"

	"go.opentelemetry.io/collector/extension/extensionauth"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// logsPath is OTLP/HTTP's logs path.
const logsPath = "/v1/logs"

const (
	protobufType = "application/x-protobuf"
	jsonType     = "application/json"
)

// authenticated runs next for requests authenticator accepts, with its
// context; a refusal is answered with the status the authenticator gave
// (401 for Unauthenticated, 503 for Unavailable, so that a sender retries
// what could not be checked).
func authenticated(authenticator extensionauth.Server, params []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sources := map[string][]string(req.Header.Clone())
		query := req.URL.Query()
		for _, p := range params {
			if v, ok := query[p]; ok {
				sources[p] = v
			}
		}
		ctx, err := authenticator.Authenticate(req.Context(), sources)
		if err != nil {
			st, ok := status.FromError(err)
			if !ok {
				st = status.New(codes.Unauthenticated, err.Error())
			}
			writeStatus(w, encodingOf(req), st)
			return
		}
		next.ServeHTTP(w, req.WithContext(ctx))
	})
}

// handleLogs is POST /v1/logs, protobuf or JSON.
func (r *otlpReceiver) handleLogs(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "405 method not allowed, supported: [POST]", http.StatusMethodNotAllowed)
		return
	}
	enc := encodingOf(req)
	if enc == "" {
		http.Error(w, "415 unsupported media type, supported: ["+jsonType+", "+protobufType+"]", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		writeStatus(w, enc, status.New(codes.InvalidArgument, "read body: "+err.Error()))
		return
	}
	otlpReq, err := r.decode(req.Context(), enc, body)
	if err != nil {
		writeStatus(w, enc, status.Convert(err))
		return
	}
	resp, err := r.export(req.Context(), r.obsHTTP, formatOf(enc), otlpReq)
	if err != nil {
		writeStatus(w, enc, status.Convert(err))
		return
	}
	var msg []byte
	if enc == jsonType {
		msg, err = resp.MarshalJSON()
	} else {
		msg, err = resp.MarshalProto()
	}
	if err != nil {
		writeStatus(w, enc, status.New(codes.Internal, "encode response: "+err.Error()))
		return
	}
	write(w, enc, http.StatusOK, msg)
}

// encodingOf is the request's OTLP encoding, "" for neither.
func encodingOf(req *http.Request) string {
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	if mt == protobufType || mt == jsonType {
		return mt
	}
	return ""
}

func formatOf(enc string) string {
	if enc == jsonType {
		return "json"
	}
	return "protobuf"
}

// writeStatus answers st as OTLP/HTTP does: its HTTP code, the Status
// message in the request's encoding (JSON when it has none), and
// Retry-After for a retryable one that says when.
func writeStatus(w http.ResponseWriter, enc string, st *status.Status) {
	code := httpCode(st.Code())
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if s := retryAfter(st); s > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s))
		}
	}
	var msg []byte
	var err error
	if enc == protobufType {
		msg, err = proto.Marshal(st.Proto())
	} else {
		enc = jsonType
		msg, err = protojson.Marshal(st.Proto())
	}
	if err != nil {
		http.Error(w, st.Message(), code)
		return
	}
	write(w, enc, code, msg)
}

func write(w http.ResponseWriter, contentType string, code int, msg []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(msg) // the client went away: nothing to do
}

// httpCode maps a gRPC code to OTLP/HTTP's (retryable: 429, 503).
func httpCode(c codes.Code) int {
	switch c {
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.Aborted:
		return http.StatusServiceUnavailable
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	default:
		return http.StatusInternalServerError
	}
}
