package k8sevent_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

const (
	corpusPerAPI  = 2000
	corpusSeed    = 20260301
	corpusWorkers = 8
	corpusTimeout = 3 * time.Minute
)

// Namespaces the corpus uses that exist on the server; every other
// namespace it uses cannot exist (not a DNS-1123 label), so a rejection
// there is a verdict on the Event, not on the cluster's state.
var corpusNamespaces = []string{"default", "kube-system", "corpus", "corpus-b"}

// Values each field takes: valid ones and ones just past each limit.
var (
	corpusNames = []string{
		"web-0.18a2b3c4d5e6f708", "a", "a.b.c", strings.Repeat("a", 253), strings.Repeat("a", 254),
		"", "Web-0", "a_b", "-a", "a-", "a..b", ".", "x%y", "a/b", "ñ", "a.", "0",
	}
	corpusNamespacePool = append(append([]string{}, corpusNamespaces...),
		"", "Bad_NS", "a.b", strings.Repeat("n", 64), "-x", "x-")
	corpusTypes   = []string{k8sevent.TypeNormal, k8sevent.TypeWarning, "", "warning", "Error"}
	corpusStrings = []string{ // reason, action, reportingInstance
		"BackOff", "x", "", strings.Repeat("r", 127), strings.Repeat("r", 128), strings.Repeat("r", 129),
		strings.Repeat("é", 64), strings.Repeat("r", 127) + "é", "with space", "ünï",
	}
	corpusNotes = []string{
		"", "back-off restarting", strings.Repeat("n", 1024), strings.Repeat("n", 1025),
		strings.Repeat("n", 1023) + "é", strings.Repeat("é", 512), "line\nbreak",
	}
	corpusControllers = []string{
		"", "kubelet", "kubernetes.io/kubelet", "example.com/ctrl", "Bad_Prefix/x", "a/b/c", "not a name",
		strings.Repeat("c", 63), strings.Repeat("c", 64), "-x", "example.com/" + strings.Repeat("c", 63),
	}
	corpusKinds  = []string{"Pod", "Node", ""}
	corpusCounts = []int64{0, 1, 2, 5, -1}
)

// corpusEvent is a valid Event for api, changed in up to four fields.
func corpusEvent(rng *rand.Rand, api string, i int) k8sevent.Event {
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
	ev := k8sevent.Event{
		Name:                fmt.Sprintf("corpus-%d", i),
		Type:                k8sevent.TypeWarning,
		Reason:              "BackOff",
		Action:              "Restarting",
		Note:                "back-off",
		Regarding:           k8sevent.ObjectRef{Kind: "Pod", Namespace: "corpus", Name: "web-0", APIVersion: "v1"},
		ReportingController: "kubernetes.io/kubelet",
		ReportingInstance:   "kubelet-node-a",
		EventTime:           base,
		Time:                base,
	}
	if api == k8sevent.APICoreV1 && rng.IntN(2) == 0 { // a legacy Event: no eventTime, the lenient rules
		ev.EventTime, ev.Action, ev.ReportingController, ev.ReportingInstance = time.Time{}, "", "", ""
		ev.FirstTimestamp, ev.LastTimestamp, ev.Count = base.Truncate(time.Second), base.Truncate(time.Second), 1
		ev.SourceComponent, ev.SourceHost = "kubelet", "node-a"
	}
	mutations := []func(){
		func() { ev.Name = pick(corpusNames) },
		func() { ev.Namespace = pick(corpusNamespacePool) },
		func() { ev.Regarding.Namespace = pick(corpusNamespacePool) },
		func() {
			ev.Regarding.Kind, ev.Regarding.Name = pick(corpusKinds), pick([]string{"web-0", "", "Node-A"})
		},
		func() { ev.Type = pick(corpusTypes) },
		func() { ev.Reason = pick(corpusStrings) },
		func() { ev.Action = pick(corpusStrings) },
		func() { ev.ReportingInstance = pick(corpusStrings) },
		func() { ev.Note = pick(corpusNotes) },
		func() { ev.ReportingController = pick(corpusControllers) },
		func() { ev.EventTime = []time.Time{{}, base, base.Add(-time.Hour)}[rng.IntN(3)] },
		func() {
			ev.SeriesCount = corpusCounts[rng.IntN(len(corpusCounts))]
			ev.SeriesLastObservedTime = []time.Time{{}, base.Add(time.Minute)}[rng.IntN(2)]
		},
		func() { ev.Count = corpusCounts[rng.IntN(len(corpusCounts))] },
		func() {
			ev.SourceComponent, ev.SourceHost = pick([]string{"", "kubelet"}), pick([]string{"", "node-a"})
		},
		func() { ev.FirstTimestamp, ev.LastTimestamp = time.Time{}, time.Time{} },
	}
	for n := rng.IntN(5); n > 0; n-- {
		mutations[rng.IntN(len(mutations))]()
	}
	return ev
}

// serverVerdict creates ev with dryRun=All as the exporter writes it (for
// events.k8s.io/v1 without the deprecated fields) and returns the
// server's refusal, nil when it accepts.
func serverVerdict(ctx context.Context, cs kubernetes.Interface, ev *k8sevent.Event, api string) (error, error) {
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var err error
	if api == k8sevent.APICoreV1 {
		_, err = cs.CoreV1().Events(ev.ObjectNamespace()).Create(ctx, ev.ToCoreV1(), opts)
	} else {
		out := ev.ToEventsV1()
		out.DeprecatedSource, out.DeprecatedCount = corev1.EventSource{}, 0
		out.DeprecatedFirstTimestamp, out.DeprecatedLastTimestamp = metav1.Time{}, metav1.Time{}
		_, err = cs.EventsV1().Events(ev.ObjectNamespace()).Create(ctx, out, opts)
	}
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsInvalid(err) || apierrors.IsNotFound(err) || apierrors.IsBadRequest(err):
		return err, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case asStatus(err, &status) && status.Status().Code == 400:
		return err, nil
	default:
		return nil, fmt.Errorf("create %s/%s: not a verdict: %w", ev.ObjectNamespace(), ev.Name, err)
	}
}

// TestValidateAgreesWithTheAPIServer holds k8sevent.Validate against a real
// kube-apiserver on a generated corpus: for every Event, both APIs, our
// verdict (valid or not) is the server's.
func TestValidateAgreesWithTheAPIServer(t *testing.T) {
	srv := kubetest.Start(t)
	cfg := srv.RESTConfig()
	cfg.QPS = -1 // bounded by the corpus, not by a client rate limit
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), corpusTimeout)
	defer cancel()
	for _, ns := range corpusNamespaces[2:] {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, api := range []string{k8sevent.APICoreV1, k8sevent.APIEventsV1} {
		t.Run(api, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(corpusSeed, uint64(len(api))))
			evs := make([]k8sevent.Event, corpusPerAPI)
			for i := range evs {
				evs[i] = corpusEvent(rng, api, i)
			}
			mismatches, accepted := checkCorpus(ctx, t, cs, evs, api)
			t.Logf("%s: %d Events, %d accepted by the server, %d refused, %d mismatches",
				api, len(evs), accepted, len(evs)-accepted, len(mismatches))
			for i, m := range mismatches {
				if i == 200 {
					break
				}
				t.Errorf("mismatch: %s", m)
			}
			assert.Empty(t, mismatches)
			// A corpus of only good or only bad Events would prove little.
			assert.Greater(t, accepted, len(evs)/5, "accepted")
			assert.Greater(t, len(evs)-accepted, len(evs)/5, "refused")
		})
	}
}

// checkCorpus asks the server about every Event and returns where Validate
// disagrees, and how many the server accepted.
func checkCorpus(ctx context.Context, t *testing.T, cs kubernetes.Interface, evs []k8sevent.Event, api string) ([]string, int) {
	var (
		mu         sync.Mutex
		mismatches []string
		accepted   int
		wg         sync.WaitGroup
		next       = make(chan int)
	)
	for range corpusWorkers {
		wg.Go(func() {
			for i := range next {
				ev := evs[i]
				ours := k8sevent.Validate(&ev, api)
				theirs, err := serverVerdict(ctx, cs, &ev, api)
				mu.Lock()
				switch {
				case err != nil:
					mismatches = append(mismatches, err.Error())
				case (ours == nil) != (theirs == nil):
					mismatches = append(mismatches, fmt.Sprintf("ours: %v | server: %v | %s", oneLine(ours), oneLine(theirs), describe(&ev)))
				}
				if err == nil && theirs == nil {
					accepted++
				}
				mu.Unlock()
			}
		})
	}
	for i := range evs {
		if ctx.Err() != nil {
			t.Errorf("corpus not done within %s: %d of %d", corpusTimeout, i, len(evs))
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return mismatches, accepted
}

func asStatus(err error, status *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus) //nolint:errorlint // client-go returns *StatusError unwrapped
	if ok {
		*status = s
	}
	return ok
}

func oneLine(err error) string {
	if err == nil {
		return "valid"
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// describe shows an Event compactly, long strings by their length.
func describe(ev *k8sevent.Event) string {
	short := func(s string) string {
		if len(s) > 20 {
			return fmt.Sprintf("<%d bytes>", len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("name=%s ns=%s regarding=%s/%s/%s type=%s reason=%s action=%s instance=%s controller=%s note=%s "+
		"eventTime=%t count=%d series=%d/%t source=%s/%s first/last=%t/%t",
		short(ev.Name), short(ev.Namespace), short(ev.Regarding.Kind), short(ev.Regarding.Namespace), short(ev.Regarding.Name),
		short(ev.Type), short(ev.Reason), short(ev.Action), short(ev.ReportingInstance), short(ev.ReportingController), short(ev.Note),
		!ev.EventTime.IsZero(), ev.Count, ev.SeriesCount, !ev.SeriesLastObservedTime.IsZero(), short(ev.SourceComponent), short(ev.SourceHost),
		!ev.FirstTimestamp.IsZero(), !ev.LastTimestamp.IsZero())
}

// TestValidateFoundByTheCorpus keeps, without a server, what the corpus
// found Validate getting wrong: a namespace that is a DNS subdomain but not
// a label (it cannot exist), a negative series count (no series is
// written), core/v1 names that are not DNS subdomains (core/v1 keeps the
// legacy name rules).
func TestValidateFoundByTheCorpus(t *testing.T) {
	ev := goodEvent()
	ev.Namespace, ev.Regarding.Namespace = "a.b", "a.b"
	for _, api := range []string{k8sevent.APICoreV1, k8sevent.APIEventsV1} {
		assert.ErrorContains(t, k8sevent.Validate(&ev, api), "namespace", api)
	}

	ev = goodEvent()
	ev.SeriesCount = -1
	assert.NoError(t, k8sevent.Validate(&ev, k8sevent.APIEventsV1))

	for _, name := range []string{"Web-0", "a_b", "-a", "ñ", strings.Repeat("a", 254)} {
		ev = goodEvent()
		ev.Name = name
		assert.NoError(t, k8sevent.Validate(&ev, k8sevent.APICoreV1), name)
		assert.Error(t, k8sevent.Validate(&ev, k8sevent.APIEventsV1), name)
	}
	for _, name := range []string{"", ".", "..", "a/b", "x%y"} {
		ev = goodEvent()
		ev.Name = name
		assert.Error(t, k8sevent.Validate(&ev, k8sevent.APICoreV1), name)
	}
}
