// The model as an http.RoundTripper: a request is answered in the calling
// goroutine, no socket involved; a watch's body is produced as it is read.

package apimodel

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// transport serves requests from the Server.
type transport struct{ s *Server }

// RoundTrip answers req. A request whose context is done gets its error,
// as net/http's transport returns it.
func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("apimodel: read request body: %w", err)
		}
		body = b
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return httpResponse(req, t.s.serve(req, body)), nil
}

// httpResponse is r as the answer to req.
func httpResponse(req *http.Request, r response) *http.Response {
	resp := &http.Response{
		Status:     fmt.Sprintf("%d %s", r.code, http.StatusText(r.code)),
		StatusCode: r.code,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  r.header,
		Request: req,
	}
	if r.stream != nil {
		resp.Body, resp.ContentLength = r.stream, -1
	} else {
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(r.body)), int64(len(r.body))
	}
	return resp
}

// userOf is the user name a request's bearer token stands for ("" when
// none or unknown).
func (t transport) userOf(req *http.Request) string {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.tokens[strings.TrimSpace(token)].name
}
