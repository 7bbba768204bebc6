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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
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

func runDemo(ctx context.Context, o options, out io.Writer) (*result, error) {
	started := time.Now()
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	if _, err := os.Stat(o.collector); err != nil {
		return nil, fmt.Errorf("collector binary: %w (make otelcol builds it)", err)
	}
	var scs []scenario
	if o.cluster == "local" || o.write {
		place := perScenario
		if o.cluster == "existing" {
			place = into(demoNamespace)
		}
		var err error
		if scs, err = loadScenarios(o.scenarios, o.window, o.maxEvents, place); err != nil {
			return nil, err
		}
	}

	tmp, err := os.MkdirTemp("", "k8sevents-demo-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer func() {
		if err := os.RemoveAll(tmp); err != nil {
			say("warning: remove %s: %v", tmp, err)
		}
	}()

	say("Starting etcd and kube-apiserver on 127.0.0.1 (data in %s) ...", tmp)
	var apiFlags []string
	if o.cluster == "existing" {
		// The output goes to namespaces that exist only in the watched
		// cluster; without this plugin the local server stores Events in
		// any namespace.
		apiFlags = append(apiFlags, "--disable-admission-plugins=NamespaceLifecycle")
	}
	kc, err := kubelocal.Start(ctx, kubelocal.Options{BinDir: o.binDir, Dir: filepath.Join(tmp, "kube"), APIServerFlags: apiFlags})
	if err != nil {
		return nil, err
	}
	defer func() {
		// After a Ctrl-C in a terminal, the children got the SIGINT too
		// and may have exited with an error of their own: not news.
		if err := kc.Stop(); err != nil && ctx.Err() == nil {
			say("warning: %v", err)
		}
	}()
	localKubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := kc.WriteKubeconfig(localKubeconfig); err != nil {
		return nil, err
	}
	localCS, err := kc.Clientset()
	if err != nil {
		return nil, err
	}
	say("  %s is up; kubeconfig while the demo runs: %s", kc.URL(), localKubeconfig)

	// Where the receiver reads and the storm is written.
	srcCfg, srcKubeconfig := kc.RESTConfig(), localKubeconfig
	srcCfg.QPS, srcCfg.Burst = 0, 0 // the storm's pace is its own, not client-go's 100/s
	if o.cluster == "existing" {
		src := k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: o.kubeconfig, Context: o.kubeContext}
		if srcCfg, err = src.RESTConfig(); err != nil {
			return nil, err
		}
		srcCfg.QPS, srcCfg.Burst = 50, 100 // someone else's API server
		srcKubeconfig = o.kubeconfig
		if o.write {
			say("Existing cluster %s: the receiver watches all namespaces; the storm is written into namespace %s there (-write).", srcCfg.Host, demoNamespace)
		} else {
			say("Existing cluster %s: the receiver watches all namespaces, read-only; nothing is written there.", srcCfg.Host)
		}
	}
	if len(scs) > 0 {
		srcCS, err := kubernetes.NewForConfig(srcCfg)
		if err != nil {
			return nil, fmt.Errorf("client for %s: %w", srcCfg.Host, err)
		}
		var all []storm.Occurrence
		for _, sc := range scs {
			all = append(all, sc.Occs...)
		}
		if err := stormsend.EnsureNamespaces(ctx, srcCS, all); err != nil {
			return nil, err
		}
	}

	writes, err := watchWrites(ctx, localCS)
	if err != nil {
		return nil, err
	}
	defer writes.stop()

	tune := tuningFor(o.speed)
	cc := collectorConfig{
		SourceKubeconfig:  srcKubeconfig,
		SourceContext:     o.kubeContext,
		InitialAll:        o.cluster == "local", // a fresh server: nothing stored can be missed or foreign
		OutputKubeconfig:  localKubeconfig,
		Tuning:            tune,
		ExporterQPS:       500,
		ExporterBurst:     1000,
		ReportingInstance: "k8sevents-demo",
	}
	if o.cluster == "local" {
		cc.Namespaces = stormNamespaces(scs)
	}
	if cc.HealthPort, err = collectorproc.FreePort(); err != nil {
		return nil, err
	}
	if cc.MetricsPort, err = collectorproc.FreePort(); err != nil {
		return nil, err
	}
	say("Starting the collector %s: k8sevents -> eventseries (series end after %s idle, heartbeat %s, spam filter %.3g/s; the defaults divided by -speed %g) -> k8sevent + debug ...",
		o.collector, tune.FinishAfter, tune.Heartbeat, tune.SpamQPS, o.speed)
	col, err := collectorproc.Start(ctx, collectorproc.Options{
		Binary:    o.collector,
		Config:    cc.render(),
		Dir:       filepath.Join(tmp, "collector"),
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", cc.HealthPort),
	})
	if err != nil {
		return nil, err
	}
	colStopped := false
	stopCollector := func() error {
		if colStopped {
			return nil
		}
		colStopped = true
		return col.Stop(time.Minute)
	}
	defer func() {
		if err := stopCollector(); err != nil && ctx.Err() == nil {
			say("warning: %v", err)
		}
	}()
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", cc.MetricsPort)
	say("  collector log: %s; its metrics: %s", col.LogPath(), metricsURL)
	say("")
	if o.cluster == "local" {
		say("The pipeline writes its Events next to the storm's, in the same namespaces (an Event lives in its")
		say("regarding object's namespace); they are told apart by reportingController %s,", controller)
		say("which the receiver's field selector leaves out. While the demo runs:")
	} else {
		say("The pipeline writes its Events (reportingController %s) into the local API server only, in the", controller)
		say("namespaces they have in the watched cluster. While the demo runs:")
	}
	say("  KUBECONFIG=%s kubectl get events -A --field-selector %s", localKubeconfig, outputSelector)
	say("")

	var progress stormProgress
	lv := startLive(ctx, o.live, out, col, metricsURL, started, func() *stormsend.Stats {
		if len(scs) == 0 {
			return nil
		}
		st := progress.total()
		return &st
	})
	defer lv.stop()

	storms := map[string]sent{}
	if len(scs) > 0 {
		if o.cluster == "existing" {
			// initial: none watches from the receiver's first list on; give
			// it time to be made before the storm starts.
			if err := sleepCtx(ctx, 3*time.Second); err != nil {
				return nil, err
			}
		}
		total := 0
		for _, sc := range scs {
			total += len(sc.Occs)
		}
		lv.printf("Replaying %s occurrences of %s at %gx as an emitter without compression writes them: one API write each.",
			num(total), strings.Join(o.scenarios, ", "), o.speed)
		remaining := time.Until(deadlineOf(ctx)) - time.Minute // room for the finish and the report
		if remaining <= 0 {
			return nil, errors.New("-max-duration leaves no time for the storm")
		}
		stats, err := runStorm(ctx, srcCfg, scs, o.speed, remaining, &progress)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			lv.printf("warning: the storm lost occurrences (the count check will show it): %v", err)
		}
		sentTotal := 0
		for name, st := range stats {
			storms[name] = sent{Occurrences: int64(st.Occurrences), Writes: st.Writes}
			sentTotal += st.Occurrences
		}
		lv.printf("Storm done. Waiting for the receiver to see all %s occurrences and for open series to finish (%s idle) ...", num(sentTotal), tune.FinishAfter)
		lv.waitFor(ctx, 90*time.Second, func(v pipelineView) bool { return v.Occurrences >= float64(sentTotal) })
		lv.waitFor(ctx, tune.FinishAfter+45*time.Second, func(v pipelineView) bool {
			return v.Occurrences >= float64(sentTotal) && v.Open == 0
		})
	} else {
		d := min(o.watchFor, time.Until(deadlineOf(ctx))-time.Minute) // room for the report
		lv.printf("Watching for %s ...", d.Round(time.Second))
		if err := sleepCtx(ctx, d); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	lv.stop()
	last := lv.latest()
	if m, err := col.Metrics(ctx, metricsURL); err == nil {
		last = readView(m) // fresher than the live view's, up to a second old
	}

	say("Stopping the collector (SIGTERM: the processor flushes what is still open, the exporter's queue drains) ...")
	if err := stopCollector(); err != nil {
		return nil, err
	}
	writes.waitQuiet(ctx, 2*time.Second, 20*time.Second)
	writes.stop()
	byObject, _, werr := writes.snapshot()
	if werr != nil {
		say("warning: %v (the write counts may be low)", werr)
	}
	events, err := listOutput(ctx, localCS)
	if err != nil {
		return nil, err
	}
	idx := scenarioIndex(scs)
	outs := make([]outputEvent, len(events))
	for i := range events {
		outs[i] = toOutput(&events[i], idx, byObject)
	}
	order := make([]string, len(scs))
	for i, sc := range scs {
		order[i] = sc.Name
	}
	res := &result{Rows: buildRows(order, storms, outs), Events: outs, Metrics: last}

	say("")
	say("Before/after: API writes an emitter without compression makes (one per occurrence) vs the pipeline's")
	say("(creates and patches that changed one of its Events, counted by watching them), after %s:", time.Since(started).Round(time.Second))
	say("")
	formatTable(out, res.Rows)
	var counted int64
	for _, r := range res.Rows {
		counted += r.Counted
	}
	say("  all: the processor counted %s occurrences; the output's counts sum to %s", num(last.Occurrences), num(counted))
	if byWatch := totalWrites(res.Rows); last.Writes > float64(byWatch) {
		say("")
		say("The exporter made %s write requests (its metric); the other %s were patches that changed nothing,",
			num(last.Writes), num(last.Writes-float64(byWatch)))
		say("which the API server answers without storing anything.")
	}
	say("")
	say("The pipeline's Events, top %d by count (of %d):", o.top, len(outs))
	formatListing(out, outs, time.Now(), o.top)
	return res, nil
}

// listOutput lists every Event the pipeline wrote, page by page.
func listOutput(ctx context.Context, cs kubernetes.Interface) ([]corev1.Event, error) {
	var out []corev1.Event
	opts := metav1.ListOptions{FieldSelector: outputSelector, Limit: 500}
	for range 10000 { // bounded: 5M Events
		list, err := cs.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the pipeline's events: %w", err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
	return nil, errors.New("list the pipeline's events: too many pages")
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}
