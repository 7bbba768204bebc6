// Command k8sevents-demo is the program behind make run: on a machine with
// no cluster it starts etcd and kube-apiserver on loopback, the project's
// collector (k8sevents receiver → eventseries processor → k8sevents exporter
// + debug), replays event storms into the API server as an emitter without
// compression would write them, and shows what the pipeline made of them:
// a live view, a before/after table per scenario with an exact-count check,
// and a kubectl get events-like listing. Everything it starts is stopped and
// its temp directory removed at the end or on Ctrl-C.
//
// With -cluster existing the receiver watches the cluster of $KUBECONFIG
// instead, read-only, and the exporter writes into the local API server; the
// storm goes into that cluster's namespace k8sevents-demo only with -write.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

// defaultScenarios are replayed unless -scenarios says otherwise.
const defaultScenarios = "crashloop,imagepull,failedscheduling,cronjob,replicaset"

// options are the demo's flags.
type options struct {
	binDir      string // etcd, kube-apiserver
	collector   string // the collector binary
	scenarios   []string
	speed       float64
	window      time.Duration
	maxEvents   int
	maxDuration time.Duration
	cluster     string // local | existing
	write       bool
	kubeconfig  string
	kubeContext string
	watchFor    time.Duration
	top         int
	live        liveMode
}

type liveMode int

const (
	liveLines     liveMode = iota // a new line every second (not a terminal)
	liveOverwrite                 // one line rewritten in place (a terminal)
	liveOff
)

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("k8sevents-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.binDir, "bin", "", "directory with etcd, kube-apiserver and otelcol-k8sevents (default: bin/ of the repository, or $"+kubelocal.BinDirEnv+")")
	fs.StringVar(&o.collector, "collector", "", "collector binary (default: <bin>/otelcol-k8sevents)")
	scenarios := fs.String("scenarios", defaultScenarios, "comma-separated built-in storms, of: "+strings.Join(storm.ScenarioNames(), ", "))
	fs.DurationVar(&o.window, "window", 30*time.Minute, "replay the first this much storm time of each scenario (0: all of it, up to two hours)")
	fs.Float64Var(&o.speed, "speed", 40, "replay speed: storm time divided by this (40: the 30 minutes in 45 s); the processor's timers are divided by it too")
	fs.IntVar(&o.maxEvents, "max-events", 0, "replay at most this many occurrences of each scenario (0: all)")
	fs.DurationVar(&o.maxDuration, "max-duration", 5*time.Minute, "bound on the whole run")
	fs.StringVar(&o.cluster, "cluster", "local", "local: a fresh kube-apiserver on loopback; existing: watch the cluster of $KUBECONFIG (read-only unless -write)")
	fs.BoolVar(&o.write, "write", false, "with -cluster existing: also write the storm, into namespace k8sevents-demo of that cluster")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "with -cluster existing: kubeconfig path (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&o.kubeContext, "context", "", "with -cluster existing: kubeconfig context (default: the current one)")
	fs.DurationVar(&o.watchFor, "watch-for", time.Minute, "with -cluster existing and no -write: how long to watch")
	fs.IntVar(&o.top, "top", 20, "Events listed at the end, by count")
	quiet := fs.Bool("quiet", false, "no live view")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(*scenarios, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.scenarios = append(o.scenarios, s)
		}
	}
	switch {
	case o.cluster != "local" && o.cluster != "existing":
		return o, fmt.Errorf("-cluster %q: want local or existing", o.cluster)
	case o.write && o.cluster != "existing":
		return o, errors.New("-write is for -cluster existing (the local cluster is always written)")
	case (o.kubeconfig != "" || o.kubeContext != "") && o.cluster != "existing":
		return o, errors.New("-kubeconfig and -context are for -cluster existing")
	case o.speed <= 0:
		return o, fmt.Errorf("-speed %v: want a positive factor", o.speed)
	case o.maxEvents < 0, o.top < 0, o.window < 0:
		return o, errors.New("-window, -max-events and -top cannot be negative")
	case o.maxDuration <= 0, o.watchFor <= 0:
		return o, errors.New("-max-duration and -watch-for must be positive")
	case len(o.scenarios) == 0 && (o.cluster == "local" || o.write):
		return o, errors.New("-scenarios: none given")
	}
	if o.binDir == "" {
		dir, err := kubelocal.FindBinDir()
		if err != nil {
			return o, err
		}
		o.binDir = dir
	}
	if o.collector == "" {
		o.collector = filepath.Join(o.binDir, "otelcol-k8sevents")
	}
	switch {
	case *quiet:
		o.live = liveOff
	case isTerminal(os.Stdout):
		o.live = liveOverwrite
	}
	return o, nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8sevents-demo:", err)
		os.Exit(2)
	}
	// The first Ctrl-C (or SIGTERM) cancels: the storm stops and everything
	// started is stopped in order by run's defers. A second one kills the
	// demo at once; on Linux its children die with it (Pdeathsig).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := run(ctx, o, os.Stdout)
	interrupted := ctx.Err() != nil
	stop()
	switch {
	case interrupted:
		fmt.Fprintln(os.Stderr, "k8sevents-demo: interrupted; everything stopped and cleaned up")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "k8sevents-demo:", err)
		os.Exit(1)
	case !res.exact():
		fmt.Fprintln(os.Stderr, "k8sevents-demo: the output's counts do not add up to the occurrences sent")
		os.Exit(1)
	}
}
