package sim

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/apimodel"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"
)

// World is one simulated cluster: its API server, the collectors of one
// shape running against it, the cluster's own components and apps that
// make Events, and the faults in force. Everything runs in one synctest
// bubble, on its virtual clock.
type World struct {
	t     testing.TB
	shape Shape
	api   *apimodel.Server
	admin kubernetes.Interface // the cluster's own components: no faults

	procs map[string]*process
	names []string // of procs, in creation order

	mu     sync.Mutex // guards faults, log and hasSink: goroutines of every process use them
	faults []*apiFault

	overrides map[string]func(*eventseriesprocessor.Config)
	mayCreate map[string]map[string]bool // namespace -> apps' usernames that may create Events there (OTLP shapes)
	ledger    *ledger                    // what was made, for the checker
	sink      *sinkLog                   // what the log sinks took (sink.go)
	hasSink   bool                       // some process's pipeline has one
	emitters  *emitters
	apps      []*app
	log       []string // what happened, for a failing schedule's report
}

// Shape is a deployment the simulator runs: which ready configurations, as
// how many processes.
type Shape string

const (
	// ShapeMirror: the cluster's Events watched and written back
	// (mirror.yaml), by one collector or two with leader election.
	ShapeMirror Shape = "mirror"
	// ShapeIngest: apps' OTLP records, one tier (otlp-ingestion.yaml).
	ShapeIngest Shape = "ingest"
	// ShapeTiers: apps' OTLP records through tier 1 (load balancing) to
	// tier 2 (tier1-loadbalancer.yaml, tier2-processor.yaml).
	ShapeTiers Shape = "tiers"
)

const (
	adminToken   = "sim-admin"
	collectorNS  = "otel-k8sevents"
	otlpAudience = "otel-k8sevents"
	mirrorCtrl   = "k8sevents.io/mirror"
	ingestCtrl   = "k8sevents.io/otlp-ingestion"
	// finalSettle, finalQuiet, finalLimit: the end of a run waits
	// finalSettle, then until finalQuiet passes without a write, at most
	// finalLimit in all. finalQuiet outlasts every series.finish_after
	// simulated (6m, the default; the processor's build refuses a longer
	// one): a count held back is written only when its series ends, so a
	// shorter quiet could stop the run with that count still in a queue.
	finalSettle = 10 * time.Minute
	finalQuiet  = 7 * time.Minute
	finalLimit  = time.Hour
)

// namespaces are the cluster's namespaces that Events are made in.
var namespaces = []string{"default", "team-a", "team-b"}

// newWorld builds the world of a shape; with sink, each tier-2 process
// also hands its records to a log sink, as the end-to-end tests run them
// (the other shapes' configurations have one).
func newWorld(t testing.TB, shape Shape, replicas int, sink bool) *World {
	api := apimodel.New(apimodel.Options{})
	api.AddUser(adminToken, "sim:admin", "system:masters")
	api.Allow("sim:admin", []string{"*"}, "*", "*", "")
	for _, ns := range []string{collectorNS, "team-a", "team-b"} {
		api.CreateNamespace(ns)
	}
	adminCfg := api.RESTConfig(adminToken)
	adminCfg.QPS = -1 // the cluster's components are many: no client-side limit
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		t.Fatalf("sim: admin client: %v", err)
	}
	w := &World{t: t, shape: shape, api: api, admin: admin, procs: map[string]*process{},
		overrides: map[string]func(*eventseriesprocessor.Config){}, ledger: newLedger(), sink: newSinkLog(), mayCreate: map[string]map[string]bool{}}
	w.emitters = newEmitters(w)
	switch shape {
	case ShapeMirror:
		for i := range max(replicas, 1) {
			name := fmt.Sprintf("mirror-%d", i)
			w.addProcess(name, "mirror.yaml", map[string]string{"POD_NAME": name, "POD_NAMESPACE": collectorNS})
		}
	case ShapeIngest:
		w.addProcess("ingest-0", "otlp-ingestion.yaml", map[string]string{"REPORTING_CONTROLLER": ingestCtrl})
	case ShapeTiers:
		n := max(replicas, 1)
		endpoints := ""
		for i := range n {
			name := fmt.Sprintf("tier2-%d", i)
			w.addProcess(name, "tier2-processor.yaml", map[string]string{"REPORTING_INSTANCE": name, "REPORTING_CONTROLLER": ingestCtrl})
			w.procs[name].sink = sink
			endpoints += fmt.Sprintf("%s%s:4317", map[bool]string{true: "", false: ", "}[i == 0], name)
		}
		w.addProcess("tier1-0", "tier1-loadbalancer.yaml", map[string]string{"TIER2_ENDPOINTS": "[" + endpoints + "]"})
	}
	return w
}

// addProcess adds a collector with its own ServiceAccount and the RBAC the
// deploy manifests give it.
func (w *World) addProcess(name, file string, env map[string]string) {
	p := &process{w: w, name: name, file: file, env: env, disk: newDisk()}
	w.procs[name] = p
	w.names = append(w.names, name)
	user := serviceAccountUser(name)
	w.api.AddUser(w.serviceAccountToken(name), user, "system:serviceaccounts", "system:serviceaccounts:"+collectorNS)
	w.api.Allow(user, []string{"get", "list", "watch", "create", "patch", "update"}, "", "events", "")
	w.api.Allow(user, []string{"get", "list", "watch", "create", "patch", "update"}, "events.k8s.io", "events", "")
	w.api.Allow(user, []string{"get", "create", "update"}, "coordination.k8s.io", "leases", collectorNS)
	w.api.Allow(user, []string{"get"}, "", "namespaces", "kube-system")
	w.api.Allow(user, []string{"list", "watch"}, "", "namespaces", "")
	w.api.Allow(user, []string{"create"}, "authentication.k8s.io", "tokenreviews", "")
	w.api.Allow(user, []string{"create"}, "authorization.k8s.io", "subjectaccessreviews", "")
}

func serviceAccountUser(name string) string {
	return "system:serviceaccount:" + collectorNS + ":" + name
}

func (w *World) serviceAccountToken(name string) string { return "sa-token-" + name }

// configure applies the schedule's overrides of a process's eventseries
// configuration (a config change between restarts).
func (w *World) configure(proc string, cfg *eventseriesprocessor.Config) {
	if f := w.overrides[proc]; f != nil {
		f(cfg)
	}
}

// logf notes what happened, at the virtual time it happened.
func (w *World) logf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = append(w.log, fmt.Sprintf("%s %s", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...)))
}

// settle lets every goroutine run until all wait on the clock or on each
// other, then reaps the processes that crashed at a crash point.
func (w *World) settle() {
	synctest.Wait()
	w.expireFaults()
	for _, name := range w.names {
		p := w.procs[name]
		if err := p.started(); err != nil {
			w.t.Fatalf("%v", err)
		}
		if p.died() {
			w.logf("%s crashed at its crash point", name)
			p.crash()
		}
	}
}

// advance moves the virtual clock; everything due meanwhile runs.
func (w *World) advance(d time.Duration) {
	time.Sleep(d)
	w.settle()
}

// startAll starts every process that is down.
func (w *World) startAll(ctx context.Context) {
	for _, name := range w.names {
		if p := w.procs[name]; p.inc == nil || p.died() {
			if err := p.start(ctx); err != nil {
				w.t.Fatalf("sim: %v", err)
			}
			w.logf("%s started (incarnation %d)", name, p.incarnations)
		}
	}
}

// finish ends the faults, starts every process, lets the pipeline run
// quiet until every series ended and every queue drained, and stops
// everything: what the API server then holds is the run's result.
func (w *World) finish(ctx context.Context) {
	w.mu.Lock()
	w.faults = nil
	w.mu.Unlock()
	w.expireFaults() // the server's start, if one was under way, is over
	for _, d := range w.disksOf() {
		d.setFailing(false)
	}
	for _, name := range w.names {
		for _, inc := range []*incarnation{w.procs[name].inc, w.procs[name].starting} {
			if inc != nil {
				inc.life.disarm()
			}
		}
		w.procs[name].crashAt = nil
	}
	w.startAll(ctx)
	for _, a := range w.apps {
		a.finish()
	}
	// Quiet: series end finish_after after their last records, queues
	// drain within their backoff; then nothing is written for a while.
	w.advance(finalSettle)
	for waited := finalSettle; waited < finalLimit; waited += finalQuiet {
		before := len(w.api.Writes())
		w.advance(finalQuiet)
		if len(w.api.Writes()) == before {
			break
		}
	}
	w.stopAll(ctx)
}

func (w *World) disksOf() []*disk {
	var out []*disk
	for _, name := range w.names {
		out = append(out, w.procs[name].disk)
	}
	return out
}

// stopAll stops every process gracefully, tier 1 before tier 2 (the
// order a rollout of both would), and waits until crashed ones are reaped.
func (w *World) stopAll(ctx context.Context) {
	names := append([]string(nil), w.names...)
	sort.SliceStable(names, func(i, j int) bool { return names[i] > names[j] })
	for _, name := range names {
		p := w.procs[name]
		if err := p.stop(ctx); err != nil {
			w.logf("%s stopped with: %v", name, err)
		}
	}
	for _, a := range w.apps {
		a.close()
	}
	w.settle()
}

// faultTransport is the transport wrapper that applies the faults in force
// to process proc's requests.
func (w *World) faultTransport(proc string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return apimodel.NewFaultTransport(next, func(r apimodel.Request) *apimodel.Fault { return w.decide(proc, r) })
	}
}

// app is the app named name, made at its first use: a ServiceAccount with
// a token for the collectors' audience, allowed to create Events in the
// namespaces of its series, sending to the shape's entry.
func (w *World) app(name string) *app {
	for _, a := range w.apps {
		if a.name == name {
			return a
		}
	}
	target := "ingest-0"
	if w.shape == ShapeTiers {
		target = "tier1-0"
	}
	a := newApp(w, name, target, SenderGivesUp)
	user := "system:serviceaccount:default:" + name
	w.api.AddServiceAccountToken(a.token, apimodel.ServiceAccount{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		[]string{otlpAudience}, time.Now().Add(24*time.Hour))
	for _, s := range w.emitters.series {
		if s.Controller == name {
			w.api.Allow(user, []string{"create"}, "", "events", s.Namespace)
			if w.mayCreate[s.Namespace] == nil {
				w.mayCreate[s.Namespace] = map[string]bool{}
			}
			w.mayCreate[s.Namespace][user] = true
		}
	}
	w.apps = append(w.apps, a)
	return a
}
