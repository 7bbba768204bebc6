package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

func TestBadFlagsExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "one of -scenario"},
		{[]string{"-scenario", "crashloop", "-file", "x.jsonl"}, "one of -scenario"},
		{[]string{"-scenario", "hurricane"}, `unknown scenario "hurricane"`},
		{[]string{"-scenario", "crashloop", "-to", "kafka"}, `-to "kafka"`},
		{[]string{"-scenario", "crashloop", "-speed", "-1"}, "-speed"},
		{[]string{"-scenario", "crashloop", "-max-events", "-3"}, "-max-events"},
		{[]string{"-scenario", "crashloop", "-max-duration", "0s"}, "-max-duration"},
		{[]string{"-scenario", "crashloop", "-max-duration", "soon"}, "invalid value"},
		{[]string{"-scenario", "crashloop", "-endpoint", ""}, "-endpoint"},
		{[]string{"-scenario", "crashloop", "-create-namespaces"}, "API modes"},
		{[]string{"-scenario", "crashloop", "extra"}, `unexpected argument "extra"`},
		{[]string{"-bogus"}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), c.args, &stdout, &stderr), "%v", c.args)
		assert.Contains(t, stderr.String(), c.want, "%v", c.args)
		assert.Empty(t, stdout.String())
	}
	var stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), "usage: eventstorm")
}

func TestGoodFlags(t *testing.T) {
	c, err := parseFlags([]string{"-file", "s.jsonl.gz", "-to", "events", "-kubeconfig", "kc", "-context", "kind",
		"-speed", "60", "-max-events", "10", "-max-duration", "30s", "-restamp", "-create-namespaces"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, config{file: "s.jsonl.gz", to: "events", endpoint: "127.0.0.1:4317", kubeconfig: "kc", kcontext: "kind",
		speed: 60, maxEvents: 10, maxDuration: 30e9, restamp: true, createNS: true}, c)
}

type countingServer struct {
	plogotlp.UnimplementedGRPCServer
	records atomic.Int64
}

func (s *countingServer) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	s.records.Add(int64(req.Logs().LogRecordCount()))
	return plogotlp.NewExportResponse(), nil
}

func TestReplaysAFileOverOTLP(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, recv := grpc.NewServer(), &countingServer{}
	plogotlp.RegisterGRPCServer(srv, recv)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	path := filepath.Join(t.TempDir(), "s.jsonl.gz")
	require.NoError(t, storm.WriteFile(path, storm.CronJob()[:40]))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-file", path, "-endpoint", lis.Addr().String(), "-max-events", "25"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Equal(t, int64(25), recv.records.Load())
	assert.Regexp(t, `^eventstorm: .*s\.jsonl\.gz -> otlp 127\.0\.0\.1:\d+: 25 occurrences, 25 writes, 0 failures in \S+\n$`, stdout.String())

	stdout.Reset()
	assert.Equal(t, 1, run(context.Background(), []string{"-file", path + ".missing"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "open stream")
}
