// Faults: a transport in front of the model (or any transport) that asks,
// for each request, whether it fails and how: an HTTP error answer, a
// timeout before or after the request is applied, a connection reset.

package apimodel

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Request describes a request to a fault decision. Verb is get, list,
// watch, create, update, patch or delete for a resource (Resource set),
// the lowercase HTTP method for a path (/readyz, discovery). User is the
// bearer token's user ("" when the next transport is not the model's).
type Request struct {
	Verb, Group, Version, Resource, Namespace, Name, User string
	Path                                                  string
}

// Fault is what happens to a request instead of its answer.
type Fault struct {
	// Status, Reason, Message, RetryAfter: an HTTP error answer (403, 429
	// with Retry-After, 500, 503...) with a metav1.Status body; nothing is
	// applied. RetryAfter is sent in whole seconds (rounded up).
	Status     int
	Reason     metav1.StatusReason
	Message    string
	RetryAfter time.Duration
	// TimeoutBefore: the client gets a timeout error, nothing applied.
	TimeoutBefore bool
	// TimeoutAfter: the server applies the request, the client gets a
	// timeout error (the answer is lost). A watch is opened and closed at
	// once: nothing of it stays open.
	TimeoutAfter bool
	// Reset: the connection is reset before the request is sent
	// (syscall.ECONNRESET, which client-go's net.IsConnectionReset knows);
	// nothing applied.
	Reset bool
}

// NewFaultTransport wraps next: each request is described to decide,
// which returns a fault or nil (next answers).
func NewFaultTransport(next http.RoundTripper, decide func(Request) *Fault) http.RoundTripper {
	return &faultTransport{next: next, decide: decide}
}

type faultTransport struct {
	next   http.RoundTripper
	decide func(Request) *Fault
}

// userResolver is a transport that knows bearer tokens' users.
type userResolver interface{ userOf(*http.Request) string }

func (f *faultTransport) userOf(req *http.Request) string {
	if u, ok := f.next.(userResolver); ok {
		return u.userOf(req)
	}
	return ""
}

func (f *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	info := parseRequest(req.Method, req.URL.Path, req.URL.Query())
	r := Request{Verb: info.verb, Group: info.group, Version: info.version, Resource: info.resource,
		Namespace: info.ns, Name: info.name, User: f.userOf(req), Path: req.URL.Path}
	fault := f.decide(r)
	switch {
	case fault == nil:
		return f.next.RoundTrip(req)
	case fault.TimeoutAfter:
		resp, err := f.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close() // the answer is lost; a watch ends here
		return nil, timeoutError{}
	}
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	switch {
	case fault.Reset:
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case fault.TimeoutBefore:
		return nil, timeoutError{}
	}
	return fault.response(req), nil
}

// response is the fault's HTTP error answer.
func (f *Fault) response(req *http.Request) *http.Response {
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(f.Status)
	}
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: f.Reason, Code: int32(f.Status),
	}
	r := jsonResponse(f.Status, st)
	if f.RetryAfter > 0 {
		secs := int32(math.Ceil(f.RetryAfter.Seconds()))
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: secs}
		r = jsonResponse(f.Status, st)
		r.header.Set("Retry-After", strconv.Itoa(int(secs)))
	}
	return httpResponse(req, r)
}

// timeoutError is the error of a request whose answer did not come in
// time: a net.Error that says it is a timeout, as net/http's is.
type timeoutError struct{}

func (timeoutError) Error() string {
	return "net/http: timeout awaiting response headers (apimodel fault)"
}
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

// String describes a fault for logs.
func (f *Fault) String() string {
	switch {
	case f == nil:
		return "none"
	case f.TimeoutBefore:
		return "timeout before"
	case f.TimeoutAfter:
		return "timeout after"
	case f.Reset:
		return "connection reset"
	}
	return fmt.Sprintf("HTTP %d %s", f.Status, f.Reason)
}
