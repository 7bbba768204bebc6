package sim

import (
	"fmt"
	"net/http"
	"net/url"
	"syscall"
)

// fencedTransport is a process's way to an API server: each write is an
// effect of its incarnation (a crash may come before it reaches the server
// or after the server applied it, the answer lost), and once the process is
// dead nothing it sends arrives.
type fencedTransport struct {
	next http.RoundTripper
	life *lifeline
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		if !t.life.ok() {
			return nil, refused(req)
		}
		return t.next.RoundTrip(req)
	}
	n, alive := t.life.before(effectAPI)
	if !alive {
		return nil, refused(req)
	}
	resp, err := t.next.RoundTrip(req)
	if !t.life.after(effectAPI, n) {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, refused(req)
	}
	return resp, err
}

// refused is what a client sees of a request from a dead process: no
// answer at all.
func refused(req *http.Request) error {
	return &url.Error{Op: req.Method, URL: req.URL.String(), Err: fmt.Errorf("sim: process is gone: %w", syscall.ECONNREFUSED)}
}
