package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/internal/ctxwait"
	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
)

// demoNamespace receives the storm in an existing cluster (-write).
const demoNamespace = "k8sevents-demo"

// result is what a finished run found.
type result struct {
	Rows    []row
	Events  []outputEvent
	Metrics pipelineView // the collector's last reading before it stopped
}

// exact says whether every replayed scenario's output counts add up.
func (r *result) exact() bool {
	for _, row := range r.Rows {
		if row.Storm && !row.exact() {
			return false
		}
	}
	return true
}

// run is the whole demo; every wait in it is bounded by o.maxDuration, and
// everything it starts is stopped (and its temp directory removed) before it
// returns, also when ctx is canceled.
func run(ctx context.Context, o options, out io.Writer) (*result, error) {
	dctx, cancel := context.WithTimeout(ctx, o.maxDuration)
	defer cancel()
	res, err := runDemo(dctx, o, out)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("-max-duration %s reached before the demo finished: %w", o.maxDuration, err)
	}
	return res, err
}

// demo is one run: what each phase started, for the phases after it, and
// what stop undoes.
type demo struct {
	o       options
	out     io.Writer
	started time.Time
	scs     []scenario
	undo    []func() // in the order things were started; stop runs them backwards

	tmp             string
	kc              *kubelocal.Cluster
	localKubeconfig string
	localCS         kubernetes.Interface
	srcCfg          *rest.Config // where the receiver reads and the storm is written
	srcKubeconfig   string
	writes          *writeCounter
	tune            tuning
	col             *collectorproc.Collector
	colStopped      bool
	metricsURL      string
	lv              *live
	progress        stormProgress
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// stop undoes everything the phases started, the last started first.
func (d *demo) stop() {
	for i := len(d.undo) - 1; i >= 0; i-- {
		d.undo[i]()
	}
}

// warnUnlessCanceled reports an error from stopping something. After a
// Ctrl-C in a terminal, the children got the SIGINT too and may have exited
// with an error of their own: not news.
func (d *demo) warnUnlessCanceled(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil {
		d.say("warning: %v", err)
	}
}

func runDemo(ctx context.Context, o options, out io.Writer) (*result, error) {
	d := &demo{o: o, out: out, started: time.Now()}
	defer d.stop()
	for _, phase := range []func(context.Context) error{d.prepare, d.startCluster, d.openSource, d.startCollector} {
		if err := phase(ctx); err != nil {
			return nil, err
		}
	}
	d.announce()
	storms, err := d.replayOrWatch(ctx)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return d.settle(ctx, storms)
}

// prepare checks the collector binary and loads the storm's scenarios.
func (d *demo) prepare(context.Context) error {
	if _, err := os.Stat(d.o.collector); err != nil {
		return fmt.Errorf("collector binary: %w (make otelcol builds it)", err)
	}
	if d.o.cluster == "local" || d.o.write {
		place := perScenario
		if d.o.cluster == "existing" {
			place = into(demoNamespace)
		}
		var err error
		if d.scs, err = loadScenarios(d.o.scenarios, d.o.window, d.o.maxEvents, place); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "k8sevents-demo-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	d.tmp = tmp
	d.undo = append(d.undo, func() {
		if err := os.RemoveAll(tmp); err != nil {
			d.say("warning: remove %s: %v", tmp, err)
		}
	})
	return nil
}

// startCluster starts the local etcd and kube-apiserver, where the pipeline
// writes its output.
func (d *demo) startCluster(ctx context.Context) error {
	d.say("Starting etcd and kube-apiserver on 127.0.0.1 (data in %s) ...", d.tmp)
	var apiFlags []string
	if d.o.cluster == "existing" {
		// The output goes to namespaces that exist only in the watched
		// cluster; without this plugin the local server stores Events in
		// any namespace.
		apiFlags = append(apiFlags, "--disable-admission-plugins=NamespaceLifecycle")
	}
	kc, err := kubelocal.Start(ctx, kubelocal.Options{BinDir: d.o.binDir, Dir: filepath.Join(d.tmp, "kube"), APIServerFlags: apiFlags})
	if err != nil {
		return err
	}
	d.kc = kc
	d.undo = append(d.undo, func() { d.warnUnlessCanceled(ctx, kc.Stop()) })
	d.localKubeconfig = filepath.Join(d.tmp, "kubeconfig")
	if err := kc.WriteKubeconfig(d.localKubeconfig); err != nil {
		return err
	}
	cs, err := kc.Clientset()
	if err != nil {
		return err
	}
	d.localCS = cs
	d.say("  %s is up; kubeconfig while the demo runs: %s", kc.URL(), d.localKubeconfig)
	return nil
}

// openSource picks the cluster the receiver reads and the storm is written
// to, creates the storm's namespaces there, and starts counting the
// pipeline's writes on the local server.
func (d *demo) openSource(ctx context.Context) error {
	d.srcCfg, d.srcKubeconfig = d.kc.RESTConfig(), d.localKubeconfig
	d.srcCfg.QPS, d.srcCfg.Burst = 0, 0 // the storm's pace is its own, not client-go's 100/s
	if d.o.cluster == "existing" {
		src := k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: d.o.kubeconfig, Context: d.o.kubeContext}
		cfg, err := src.RESTConfig()
		if err != nil {
			return err
		}
		cfg.QPS, cfg.Burst = 50, 100 // someone else's API server
		d.srcCfg, d.srcKubeconfig = cfg, d.o.kubeconfig
		if d.o.write {
			d.say("Existing cluster %s: the receiver watches all namespaces; the storm is written into namespace %s there (-write).", cfg.Host, demoNamespace)
		} else {
			d.say("Existing cluster %s: the receiver watches all namespaces, read-only; nothing is written there.", cfg.Host)
		}
	}
	if len(d.scs) > 0 {
		srcCS, err := kubernetes.NewForConfig(d.srcCfg)
		if err != nil {
			return fmt.Errorf("client for %s: %w", d.srcCfg.Host, err)
		}
		if err := stormsend.CreateNamespaces(ctx, srcCS, stormNamespaces(d.scs)...); err != nil {
			return err
		}
	}
	writes, err := watchWrites(ctx, d.localCS)
	if err != nil {
		return err
	}
	d.writes = writes
	d.undo = append(d.undo, writes.stop)
	return nil
}

// startCollector starts the collector on testdata/config/mirror.yaml and
// the demo's overlay.
func (d *demo) startCollector(ctx context.Context) error {
	d.tune = tuningFor(d.o.speed)
	cc := collectorConfig{
		SourceKubeconfig:  d.srcKubeconfig,
		SourceContext:     d.o.kubeContext,
		InitialAll:        d.o.cluster == "local", // a fresh server: nothing stored can be missed or foreign
		OutputKubeconfig:  d.localKubeconfig,
		Tuning:            d.tune,
		ExporterQPS:       500,
		ExporterBurst:     1000,
		ReportingInstance: "k8sevents-demo",
	}
	if d.o.cluster == "local" {
		cc.Namespaces = stormNamespaces(d.scs)
	}
	var err error
	if cc.HealthPort, err = childproc.FreePort(); err != nil {
		return err
	}
	if cc.MetricsPort, err = childproc.FreePort(cc.HealthPort); err != nil {
		return err
	}
	root, err := childproc.ModuleRoot()
	if err != nil {
		return err
	}
	base, overlay, err := cc.files(root)
	if err != nil {
		return err
	}
	d.say("Starting the collector %s: k8sevents -> eventseries (series end after %s idle, heartbeat %s, spam filter %.3g/s; the defaults divided by -speed %g) -> k8sevent + debug ...",
		d.o.collector, d.tune.FinishAfter, d.tune.Heartbeat, d.tune.SpamQPS, d.o.speed)
	col, err := collectorproc.Start(ctx, collectorproc.Options{
		Binary:    d.o.collector,
		Config:    base,
		Overlays:  []string{overlay},
		Dir:       filepath.Join(d.tmp, "collector"),
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", cc.HealthPort),
	})
	if err != nil {
		return err
	}
	d.col = col
	d.undo = append(d.undo, func() { d.warnUnlessCanceled(ctx, d.stopCollector()) })
	d.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", cc.MetricsPort)
	d.say("  collector log: %s; its metrics: %s", col.LogPath(), d.metricsURL)
	return nil
}

func (d *demo) stopCollector() error {
	if d.colStopped {
		return nil
	}
	d.colStopped = true
	return d.col.Stop(time.Minute)
}

// announce says where the output goes and starts the live view.
func (d *demo) announce() {
	d.say("")
	if d.o.cluster == "local" {
		d.say("The pipeline writes its Events next to the storm's, in the same namespaces (an Event lives in its")
		d.say("regarding object's namespace); they are told apart by reportingController %s,", controller)
		d.say("which the receiver's field selector leaves out. While the demo runs:")
	} else {
		d.say("The pipeline writes its Events (reportingController %s) into the local API server only, in the", controller)
		d.say("namespaces they have in the watched cluster. While the demo runs:")
	}
	d.say("  KUBECONFIG=%s kubectl get events -A --field-selector %s", d.localKubeconfig, outputSelector)
	d.say("")
}

// replayOrWatch replays the storm and waits for the pipeline to take it
// in, or, with no storm, watches the existing cluster for -watch-for.
func (d *demo) replayOrWatch(ctx context.Context) (map[string]sent, error) {
	d.lv = startLive(ctx, d.o.live, d.out, d.col, d.metricsURL, d.started, func() *stormsend.Stats {
		if len(d.scs) == 0 {
			return nil
		}
		st := d.progress.total()
		return &st
	})
	d.undo = append(d.undo, d.lv.stop)
	if len(d.scs) == 0 {
		wait := min(d.o.watchFor, time.Until(deadlineOf(ctx))-time.Minute) // room for the report
		d.lv.printf("Watching for %s ...", wait.Round(time.Second))
		return map[string]sent{}, ctxwait.Sleep(ctx, wait)
	}
	if d.o.cluster == "existing" {
		// initial: none watches from the receiver's first list on; give
		// it time to be made before the storm starts.
		if err := ctxwait.Sleep(ctx, 3*time.Second); err != nil {
			return nil, err
		}
	}
	total := 0
	for _, sc := range d.scs {
		total += len(sc.Occs)
	}
	d.lv.printf("Replaying %s occurrences of %s at %gx as an emitter without compression writes them: one API write each.",
		num(total), strings.Join(d.o.scenarios, ", "), d.o.speed)
	remaining := time.Until(deadlineOf(ctx)) - time.Minute // room for the finish and the report
	if remaining <= 0 {
		return nil, errors.New("-max-duration leaves no time for the storm")
	}
	stats, err := runStorm(ctx, d.srcCfg, d.scs, d.o.speed, remaining, &d.progress)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		d.lv.printf("warning: the storm lost occurrences (the count check will show it): %v", err)
	}
	storms := map[string]sent{}
	sentTotal := 0
	for name, st := range stats {
		storms[name] = sent{Occurrences: int64(st.Occurrences), Writes: st.Writes}
		sentTotal += st.Occurrences
	}
	d.lv.printf("Storm done. Waiting for the receiver to see all %s occurrences and for open series to finish (%s idle) ...", num(sentTotal), d.tune.FinishAfter)
	d.lv.waitFor(ctx, 90*time.Second, func(v pipelineView) bool { return v.Occurrences >= float64(sentTotal) })
	d.lv.waitFor(ctx, d.tune.FinishAfter+45*time.Second, func(v pipelineView) bool {
		return v.Occurrences >= float64(sentTotal) && v.Open == 0
	})
	return storms, nil
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}
