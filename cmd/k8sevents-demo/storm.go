package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// scenario is one storm of the demo, moved to where the demo writes it.
type scenario struct {
	Name string
	Occs []storm.Occurrence
}

// objectKey identifies a regarding object, to tell which scenario an
// output Event belongs to.
type objectKey struct{ Kind, Namespace, Name, UID string }

func keyOf(r storm.Ref) objectKey { return objectKey{r.Kind, r.Namespace, r.Name, r.UID} }

// placement says where an object of a scenario goes: its namespace ns in
// the scenario, and how many namespaces the scenario uses.
type placement func(scenario string, namespaces int, ns string) string

// loadScenarios generates the named storms, each cut to its first window of
// storm time and to maxEvents occurrences (0: no cut), and moves their
// objects where place says.
func loadScenarios(names []string, window time.Duration, maxEvents int, place placement) ([]scenario, error) {
	seen := map[string]bool{}
	var out []scenario
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		occs, err := storm.Scenario(name)
		if err != nil {
			return nil, err
		}
		if window > 0 && len(occs) > 0 {
			end := occs[0].Time.Add(window)
			n := sort.Search(len(occs), func(i int) bool { return !occs[i].Time.Before(end) })
			occs = occs[:n]
		}
		if maxEvents > 0 && len(occs) > maxEvents {
			occs = occs[:maxEvents]
		}
		nss := map[string]bool{}
		for i := range occs {
			if ns := occs[i].Regarding.Namespace; ns != "" {
				nss[ns] = true
			}
		}
		for i := range occs {
			relocate(&occs[i], func(ns string) string { return place(name, len(nss), ns) })
		}
		out = append(out, scenario{Name: name, Occs: occs})
	}
	if len(out) == 0 {
		return nil, errors.New("no scenario given")
	}
	return out, nil
}

// perScenario puts each scenario in a namespace named after it
// (storm-crashloop), so that a kubectl user sees which is which; a scenario
// spanning namespaces (mixed) keeps its own, which are already distinct.
func perScenario(sc string, namespaces int, ns string) string {
	if namespaces > 1 {
		return ns
	}
	return "storm-" + sc
}

// into puts every object into one namespace.
func into(namespace string) placement {
	return func(string, int, string) string { return namespace }
}

// relocate moves an occurrence's namespaced objects to to(namespace); a note
// naming the pod as kubelet does (name_namespace(uid)) follows.
func relocate(o *storm.Occurrence, to func(string) string) {
	from := o.Regarding.Namespace
	if from == "" {
		return
	}
	ns := to(from)
	if ns == from {
		return
	}
	o.Regarding.Namespace = ns
	if o.Related != nil && o.Related.Namespace == from {
		rel := *o.Related
		rel.Namespace = ns
		o.Related = &rel
	}
	o.Note = strings.ReplaceAll(o.Note, "_"+from+"(", "_"+ns+"(")
}

// scenarioIndex maps each regarding object to its scenario. An object that
// two scenarios share (only possible when they are written into one
// namespace) belongs to both names joined with "+".
func scenarioIndex(scs []scenario) map[objectKey]string {
	idx := map[objectKey]string{}
	for _, sc := range scs {
		for i := range sc.Occs {
			k := keyOf(sc.Occs[i].Regarding)
			switch cur, ok := idx[k]; {
			case !ok:
				idx[k] = sc.Name
			case cur != sc.Name && !strings.Contains("+"+cur+"+", "+"+sc.Name+"+"):
				idx[k] = cur + "+" + sc.Name
			}
		}
	}
	return idx
}

// stormNamespaces lists the namespaces the storm's Events live in.
func stormNamespaces(scs []scenario) []string {
	storms := make([][]storm.Occurrence, len(scs))
	for i, sc := range scs {
		storms[i] = sc.Occs
	}
	return storm.Namespaces(storms...)
}

// stormProgress is what each scenario's replay reported last, for the live
// view.
type stormProgress struct {
	mu    sync.Mutex
	stats map[string]stormsend.Stats
}

func (p *stormProgress) set(name string, st stormsend.Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stats == nil {
		p.stats = map[string]stormsend.Stats{}
	}
	p.stats[name] = st
}

// total sums the scenarios' stats.
func (p *stormProgress) total() stormsend.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var t stormsend.Stats
	for _, st := range p.stats {
		t.Occurrences += st.Occurrences
		t.Writes += st.Writes
		t.Failures += st.Failures
		t.Elapsed = max(t.Elapsed, st.Elapsed)
	}
	return t
}

// runStorm replays every scenario at once, each as a raw emitter (one API
// write per occurrence), occurrence times restamped to now for the
// processing-time pipeline. It returns each scenario's stats; a scenario
// that lost occurrences makes an error, but the others still count.
func runStorm(ctx context.Context, cfg *rest.Config, scs []scenario, speed float64, maxDuration time.Duration, progress *stormProgress) (map[string]stormsend.Stats, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		out  = map[string]stormsend.Stats{}
		errs []error
	)
	for _, sc := range scs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := stormsend.Raw(ctx, cfg, sc.Occs, stormsend.Options{
				Speed:       speed,
				MaxDuration: maxDuration,
				Restamp:     true,
				Progress:    func(st stormsend.Stats) { progress.set(sc.Name, st) },
			})
			mu.Lock()
			defer mu.Unlock()
			out[sc.Name] = st
			if err != nil {
				errs = append(errs, fmt.Errorf("scenario %s: %w", sc.Name, err))
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
