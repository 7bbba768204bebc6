// Command eventstorm replays a storm of Kubernetes Events, a built-in
// scenario or a recorded stream file, at real or accelerated speed: as
// OTLP logs to a collector, or as Events written to an API server, directly
// (raw: what an emitter without compression writes) or through client-go's
// recorders (record: tools/record; events: tools/events).
//
//	eventstorm -scenario crashloop -to otlp -endpoint 127.0.0.1:4317 -speed 60
//	eventstorm -file testdata/streams/cronjob.jsonl -to record -create-namespaces
//
// It prints a progress line on stderr once a second and a summary on
// stdout. Exit code 2 means bad flags, 1 a failed replay.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
)

// Sinks -to accepts.
const (
	toOTLP   = "otlp"
	toRaw    = "raw"
	toRecord = stormsend.RecorderLegacy
	toEvents = stormsend.RecorderEvents
)

type config struct {
	scenario, file       string
	to, endpoint         string
	kubeconfig, kcontext string
	speed                float64
	maxEvents            int
	maxDuration          time.Duration
	restamp, createNS    bool
}

func main() {
	// client-go logs through klog; its informational lines (client-side
	// throttling of a fast replay) would break the progress line. Errors,
	// such as events the API server refused, still show.
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "eventstorm: %v\n", err)
		return 2
	}
	if err := replay(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "eventstorm: %v\n", err)
		return 1
	}
	return 0
}

// parseFlags reads and checks the command line; every error is one of usage.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("eventstorm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.scenario, "scenario", "", "built-in scenario: "+strings.Join(storm.ScenarioNames(), ", "))
	fs.StringVar(&c.file, "file", "", "stream file to replay (JSON lines, .jsonl or .jsonl.gz)")
	fs.StringVar(&c.to, "to", toOTLP, "where to: otlp (a collector), raw (Events, one write per occurrence), record (client-go tools/record), events (client-go tools/events)")
	fs.StringVar(&c.endpoint, "endpoint", "127.0.0.1:4317", "OTLP gRPC endpoint (insecure) for -to otlp")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig for the API modes (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&c.kcontext, "context", "", "kubeconfig context (default its current one)")
	fs.Float64Var(&c.speed, "speed", 0, "0: as fast as possible; 1: real time; N: N times faster")
	fs.IntVar(&c.maxEvents, "max-events", 0, "send at most this many occurrences (0: all)")
	fs.DurationVar(&c.maxDuration, "max-duration", 10*time.Minute, "stop after this wall time")
	fs.BoolVar(&c.restamp, "restamp", false, "send occurrences with the time they are sent at, not their recorded time")
	fs.BoolVar(&c.createNS, "create-namespaces", false, "create the namespaces the Events go to (API modes)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: eventstorm (-scenario NAME | -file PATH.jsonl[.gz]) [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	case (c.scenario == "") == (c.file == ""):
		return c, errors.New("give one of -scenario NAME or -file PATH")
	case c.to != toOTLP && c.to != toRaw && c.to != toRecord && c.to != toEvents:
		return c, fmt.Errorf("-to %q: want otlp, raw, record or events", c.to)
	case c.speed < 0:
		return c, fmt.Errorf("-speed %v: want 0 (as fast as possible) or more", c.speed)
	case c.maxEvents < 0:
		return c, fmt.Errorf("-max-events %d: want 0 (all) or more", c.maxEvents)
	case c.maxDuration <= 0:
		return c, fmt.Errorf("-max-duration %v: want more than 0", c.maxDuration)
	case c.to == toOTLP && c.endpoint == "":
		return c, errors.New("-to otlp needs -endpoint HOST:PORT")
	case c.to == toOTLP && c.createNS:
		return c, errors.New("-create-namespaces is for the API modes (-to raw, record or events)")
	}
	if c.scenario != "" {
		if _, err := storm.Scenario(c.scenario); err != nil {
			return c, fmt.Errorf("-scenario: %w", err)
		}
	}
	return c, nil
}

func replay(ctx context.Context, c config, stdout, stderr io.Writer) error {
	what, occs, err := load(c)
	if err != nil {
		return err
	}
	total := len(occs)
	if c.maxEvents > 0 {
		total = min(total, c.maxEvents)
	}
	p := newProgress(stderr, total)
	opts := stormsend.Options{Speed: c.speed, MaxEvents: c.maxEvents, MaxDuration: c.maxDuration, Restamp: c.restamp, Progress: p.report}
	where, st, err := send(ctx, c, occs, opts)
	p.done()
	if where != "" {
		fmt.Fprintf(stdout, "eventstorm: %s -> %s: %d occurrences, %d writes, %d failures in %v\n",
			what, where, st.Occurrences, st.Writes, st.Failures, st.Elapsed.Round(time.Millisecond))
	}
	return err
}

func load(c config) (what string, occs []storm.Occurrence, err error) {
	if c.file != "" {
		occs, err = storm.ReadFile(c.file)
		return c.file, occs, err
	}
	occs, err = storm.Scenario(c.scenario)
	return c.scenario, occs, err
}

// send replays to the chosen sink; where is empty when nothing was sent.
func send(ctx context.Context, c config, occs []storm.Occurrence, opts stormsend.Options) (where string, st stormsend.Stats, err error) {
	if c.to == toOTLP {
		st, err = stormsend.OTLP(ctx, c.endpoint, occs, opts)
		return c.to + " " + c.endpoint, st, err
	}
	kc := k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: c.kubeconfig, Context: c.kcontext}
	rc, err := kc.RESTConfig()
	if err != nil {
		return "", st, err
	}
	if c.createNS {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return "", st, fmt.Errorf("kubernetes client: %w", err)
		}
		if err := stormsend.EnsureNamespaces(ctx, cs, occs); err != nil {
			return "", st, err
		}
	}
	if c.to == toRaw {
		st, err = stormsend.Raw(ctx, rc, occs, opts)
	} else {
		st, err = stormsend.Record(ctx, rc, occs, opts, c.to)
	}
	return c.to + " " + rc.Host, st, err
}
