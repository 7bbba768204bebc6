// Package faultproxy is a fault-injecting reverse proxy for tests: it sits
// on 127.0.0.1 in front of a real server (a kube-apiserver from
// internal/harness/kubetest) and, by rules on the HTTP verb, the URL path, a
// query parameter and the occurrence number of a matching request, answers
// an error status, 429 with or without Retry-After, holds the request until
// the client gives up, resets the connection, forwards the request and then
// drops the answer, or stalls a watch (headers, then silence). Faults are injected in front of the real server, never simulated
// inside the code under test.
//
// Typical use:
//
//	p, err := faultproxy.NewForREST(srv.RESTConfig()) // serves plain HTTP, authenticates upstream itself
//	defer p.Close()
//	h := p.Add(faultproxy.Rule{Verb: "PATCH", Path: "/apis/events.k8s.io/v1/namespaces/*/events/web-1.*",
//		Times: 1, Action: faultproxy.Fail, Code: 503})
//	... point the client at p.URL() (p.WriteKubeconfig) ...
//	// h.Acted() == 1 once the fault was injected; h.Remove() ends a fault "for a while".
package faultproxy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Action is what a rule does to a request it acts on.
type Action int

const (
	// Forward sends the request to the server and its answer to the client.
	Forward Action = iota
	// Fail answers Rule.Code (default 500) with a Kubernetes Status body,
	// and a Retry-After header when Rule.RetryAfter > 0. Code 429 is the
	// API server's throttling answer.
	Fail
	// Hold never forwards the request: it stays open until the client gives
	// up (its timeout) or the proxy closes.
	Hold
	// Reset never forwards the request: the connection is reset (TCP RST).
	Reset
	// ApplyDropAnswer forwards the request (the server applies it), then
	// resets the connection instead of answering: the client cannot know
	// its write happened.
	ApplyDropAnswer
	// Stall never forwards the request: it answers 200 and its headers,
	// then nothing until the client gives up or the proxy closes, as a
	// watch whose connection died silently.
	Stall
)

var actionNames = map[Action]string{Forward: "forward", Fail: "fail", Hold: "hold", Reset: "reset", ApplyDropAnswer: "apply-drop-answer", Stall: "stall"}

func (a Action) String() string { return actionNames[a] }

// Rule selects requests and says what to do with them.
type Rule struct {
	// Verb is the HTTP method (GET, POST, PUT, PATCH, DELETE); "" matches any.
	Verb string
	// Path is a path.Match pattern on the URL path ('*' matches within one
	// segment), e.g. "/api/v1/namespaces/*/events/*"; "" matches any.
	Path string
	// Query, when set, is a parameter the URL query must hold: "key" with
	// any non-empty value, or "key=value" exactly. "watch=true" selects
	// watches, "continue" the pages of a list after its first.
	Query string
	// From is the occurrence number (1-based, counted over the requests
	// this rule matches) of the first request it acts on; 0 means 1.
	From int
	// Times is how many matching requests it acts on from From; 0: all.
	Times int
	// After, when set, is a rule of the same proxy: this one matches only
	// requests that arrive once After has acted, so From and Times count
	// from that moment, whatever came before.
	After *Handle
	// Action is what it does to them.
	Action Action
	// Code is Fail's HTTP status; 0 means 500.
	Code int
	// RetryAfter, when positive, is sent as Retry-After (whole seconds, at
	// least 1) with Fail.
	RetryAfter time.Duration
	// Message is Fail's Status message; "" means "faultproxy: injected <code>".
	Message string
}

// Handle is an added rule: its counters, and Remove.
type Handle struct {
	p       *Proxy
	rule    Rule
	matched int
	acted   int
}

// Matched is how many requests matched the rule's verb and path.
func (h *Handle) Matched() int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.matched
}

// Acted is how many requests the rule acted on.
func (h *Handle) Acted() int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.acted
}

// Remove stops the rule; requests already held stay held until their client gives up.
func (h *Handle) Remove() {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	for i, r := range h.p.rules {
		if r == h {
			h.p.rules = append(h.p.rules[:i:i], h.p.rules[i+1:]...)
			return
		}
	}
}

// Proxy is a running fault-injecting reverse proxy on 127.0.0.1.
type Proxy struct {
	upstream *url.URL
	rt       http.RoundTripper
	fwd      *httputil.ReverseProxy
	ln       net.Listener
	srv      *http.Server
	closed   chan struct{}
	once     sync.Once

	mu    sync.Mutex
	rules []*Handle
	seen  map[string]int // by verb
	done  map[Action]int
}

// New starts a proxy to upstream (scheme://host:port) that sends requests
// through rt (which carries TLS and authentication for the upstream).
func New(upstream string, rt http.RoundTripper) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: upstream %q: %w", upstream, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{upstream: u, rt: rt, ln: ln, closed: make(chan struct{}),
		seen: map[string]int{}, done: map[Action]int{}}
	p.fwd = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = u.Host },
		Transport:     rt,
		FlushInterval: -1, // watches stream through
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// The server is down (a test stopped it): the client sees what a
			// dead server gives, a broken connection.
			resetConn(w)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's base URL, http://127.0.0.1:<port>.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy; held requests are released (reset).
func (p *Proxy) Close() error {
	p.once.Do(func() { close(p.closed) })
	return p.srv.Close()
}

// Add installs a rule after the ones already there; the first rule whose
// window holds a request acts on it, every matching rule counts it.
func (p *Proxy) Add(r Rule) *Handle {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &Handle{p: p, rule: r}
	p.rules = append(p.rules, h)
	return h
}

// Seen is how many requests with the HTTP verb reached the proxy ("" all).
func (p *Proxy) Seen(verb string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if verb == "" {
		n := 0
		for _, c := range p.seen {
			n += c
		}
		return n
	}
	return p.seen[verb]
}

// Done is how many requests got the action (Forward: passed unharmed).
func (p *Proxy) Done(a Action) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done[a]
}

// decide counts the request and picks the action of the first rule whose
// occurrence window holds it.
func (p *Proxy) decide(r *http.Request) Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[r.Method]++
	var act *Handle
	for _, h := range p.rules {
		if !h.rule.matches(r) {
			continue
		}
		h.matched++
		from := max(h.rule.From, 1)
		inWindow := h.matched >= from && (h.rule.Times == 0 || h.matched < from+h.rule.Times)
		if act == nil && inWindow {
			act = h
			h.acted++
		}
	}
	if act == nil {
		p.done[Forward]++
		return Rule{Action: Forward}
	}
	p.done[act.rule.Action]++
	return act.rule
}

// matches is called with the proxy's lock held (After's counter).
func (r Rule) matches(req *http.Request) bool {
	if r.After != nil && r.After.acted == 0 {
		return false
	}
	if r.Verb != "" && r.Verb != req.Method {
		return false
	}
	if r.Query != "" {
		key, value, exact := strings.Cut(r.Query, "=")
		got := req.URL.Query().Get(key)
		if got == "" || exact && got != value {
			return false
		}
	}
	if r.Path == "" {
		return true
	}
	ok, err := path.Match(r.Path, req.URL.Path)
	return err == nil && ok
}

// ServeHTTP applies the rules to one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rule := p.decide(r)
	switch rule.Action {
	case Fail:
		writeStatus(w, rule)
	case Hold:
		select {
		case <-r.Context().Done():
		case <-p.closed:
		}
		resetConn(w)
	case Reset:
		resetConn(w)
	case ApplyDropAnswer:
		p.applyDropAnswer(w, r)
	case Stall:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-p.closed:
		}
	default:
		p.fwd.ServeHTTP(w, r)
	}
}

func (p *Proxy) applyDropAnswer(w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = p.upstream.Scheme, p.upstream.Host, p.upstream.Host
	if resp, err := p.rt.RoundTrip(out); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	resetConn(w)
}

// writeStatus answers like the API server: a metav1.Status body, so that
// clients decode it as an API error (apierrors.IsTooManyRequests, ...).
func writeStatus(w http.ResponseWriter, rule Rule) {
	code := rule.Code
	if code == 0 {
		code = http.StatusInternalServerError
	}
	reason := map[int]string{
		http.StatusTooManyRequests: "TooManyRequests", http.StatusServiceUnavailable: "ServiceUnavailable",
		http.StatusGatewayTimeout: "Timeout", http.StatusInternalServerError: "InternalError",
		http.StatusRequestEntityTooLarge: "RequestEntityTooLarge", http.StatusNotFound: "NotFound",
		http.StatusForbidden: "Forbidden",
	}[code]
	body, _ := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
		"message": cmp.Or(rule.Message, fmt.Sprintf("faultproxy: injected %d", code)),
	})
	if rule.RetryAfter > 0 {
		secs := max(int(rule.RetryAfter.Round(time.Second)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.Copy(w, bytes.NewReader(body))
}

// resetConn aborts the connection with a TCP RST (linger 0), as a crashed
// server or a broken network does.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // HTTP/2: the server resets the stream
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
