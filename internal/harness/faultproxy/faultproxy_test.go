package faultproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// upstream counts the requests it applied.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var applied atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		applied.Add(1)
		_, _ = io.WriteString(w, "ok "+r.Method+" "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, &applied
}

func do(t *testing.T, p *Proxy, method, path string, timeout time.Duration) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, p.URL()+path, strings.NewReader("{}"))
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

func TestRulesActOnTheirOccurrencesOnly(t *testing.T) {
	up, applied := upstream(t)
	p, err := New(up.URL, http.DefaultTransport)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	h := p.Add(Rule{Verb: "PATCH", Path: "/events/*", From: 2, Times: 2, Action: Fail, Code: 503, RetryAfter: time.Second})
	var codes []int
	for range 5 {
		resp, err := do(t, p, "PATCH", "/events/a", 5*time.Second)
		require.NoError(t, err)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 503 {
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		}
	}
	assert.Equal(t, []int{200, 503, 503, 200, 200}, codes)
	resp, err := do(t, p, "POST", "/events/a", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode, "another verb is not matched")
	assert.Equal(t, 5, h.Matched())
	assert.Equal(t, 2, h.Acted())
	assert.EqualValues(t, 4, applied.Load())
	assert.Equal(t, 5, p.Seen("PATCH"))
	assert.Equal(t, 2, p.Done(Fail))
}

// TestAfterCountsFromTheOtherRulesFirstAct: a rule chained to another
// matches nothing before that one acts, then counts From and Times from
// there, however many requests came before.
func TestAfterCountsFromTheOtherRulesFirstAct(t *testing.T) {
	up, _ := upstream(t)
	p, err := New(up.URL, http.DefaultTransport)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	create := p.Add(Rule{Verb: "POST", Path: "/events", From: 2, Times: 1, Action: Fail, Code: 503})
	lists := p.Add(Rule{Verb: "GET", Path: "/events", After: create, From: 2, Times: 2, Action: Fail, Code: 500})
	code := func(method string) int {
		resp, err := do(t, p, method, "/events", 5*time.Second)
		require.NoError(t, err)
		return resp.StatusCode
	}
	var codes []int
	for _, m := range []string{"GET", "GET", "GET", "POST", "GET", "POST", "GET", "GET", "GET", "GET"} {
		codes = append(codes, code(m))
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 503, 200, 500, 500, 200}, codes)
	assert.Equal(t, 4, lists.Matched(), "the listings after the create's fault")
	assert.Equal(t, 2, lists.Acted())
}

func TestResetHoldAndApplyDropAnswer(t *testing.T) {
	up, applied := upstream(t)
	p, err := New(up.URL, http.DefaultTransport)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	reset := p.Add(Rule{Path: "/reset", Action: Reset})
	_, err = do(t, p, "POST", "/reset", 5*time.Second)
	require.Error(t, err, "the connection is reset")
	assert.Equal(t, 1, reset.Acted())

	p.Add(Rule{Path: "/hold", Action: Hold})
	_, err = do(t, p, "POST", "/hold", 200*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "held past the client's timeout")

	p.Add(Rule{Path: "/apply", Action: ApplyDropAnswer, Times: 1})
	_, err = do(t, p, "PATCH", "/apply", 5*time.Second)
	require.Error(t, err, "the answer is dropped")
	assert.EqualValues(t, 1, applied.Load(), "but the server applied it; reset and hold never reached it")

	resp, err := do(t, p, "PATCH", "/apply", 5*time.Second)
	require.NoError(t, err, "Times: 1")
	assert.Equal(t, 200, resp.StatusCode)
}

func TestRemoveEndsAFault(t *testing.T) {
	up, _ := upstream(t)
	p, err := New(up.URL, http.DefaultTransport)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	h := p.Add(Rule{Action: Fail, Code: 429})
	resp, err := do(t, p, "GET", "/x", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 429, resp.StatusCode)
	h.Remove()
	resp, err = do(t, p, "GET", "/x", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
}

func TestQuerySelectsAndStallAnswersNothing(t *testing.T) {
	up, applied := upstream(t)
	p, err := New(up.URL, http.DefaultTransport)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	pages := p.Add(Rule{Query: "continue", Action: Fail, Code: 500})
	resp, err := do(t, p, "GET", "/list?limit=1", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode, "a first page has no continue token")
	resp, err = do(t, p, "GET", "/list?limit=1&continue=abc", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 500, resp.StatusCode)
	assert.Equal(t, 1, pages.Acted())

	stall := p.Add(Rule{Query: "watch=true", Action: Stall})
	resp, err = do(t, p, "GET", "/list?watch=false", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode, "watch=false is no watch")
	assert.Zero(t, stall.Matched())
	before := applied.Load()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", p.URL()+"/list?watch=true", nil)
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err, "a stalled watch gets its headers")
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	type result struct {
		n   int
		err error
	}
	read := make(chan result, 1)
	go func() {
		n, err := resp.Body.Read(make([]byte, 1))
		read <- result{n, err}
	}()
	cancel() // the client gives up: only then does the read end
	got := <-read
	assert.Zero(t, got.n, "a stalled watch sends no byte")
	assert.Error(t, got.err)
	assert.Equal(t, 1, stall.Acted())
	assert.Equal(t, before, applied.Load(), "a stalled request never reaches the server")
}
