package eventseriesprocessor

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

// scaleStorm is a ReplicaSet scaled up and down cycles times: a burst of
// SuccessfulCreate, each with its own message, a pause of gap to 2 × gap,
// as many SuccessfulDelete, another pause.
func scaleStorm(seed uint64, cycles int, gap time.Duration) []storm.Occurrence {
	rng := rand.New(rand.NewPCG(seed, 9))
	rs := storm.Ref{Kind: "ReplicaSet", Namespace: "shop", Name: "frontend-5c8bf76b5b", UID: "uid-rs", APIVersion: "apps/v1"}
	var occs []storm.Occurrence
	at, made := storm.Start, 0
	for range cycles {
		size := 5 + rng.IntN(40)
		for _, step := range []struct{ reason, verb string }{{"SuccessfulCreate", "Created"}, {"SuccessfulDelete", "Deleted"}} {
			for i := range size {
				at = at.Add(time.Duration(100+rng.IntN(300)) * time.Millisecond)
				occs = append(occs, storm.Occurrence{Time: at, Type: "Normal", Reason: step.reason,
					Note: fmt.Sprintf("%s pod: frontend-5c8bf76b5b-%05d", step.verb, made+i), Regarding: rs,
					Controller: "replicaset-controller", Instance: "kube-controller-manager-0"})
			}
			at = at.Add(gap + time.Duration(rng.Int64N(int64(gap))))
		}
		made += size
	}
	return occs
}

// TestLegacyWritesBeyondClientGoAreLastCounts replays storms through
// legacy mode and client-go's own EventCorrelator (recordermodel.Legacy):
// ReplicaSets scaled up and down at pauses from 10 s to 15 min, and the
// built-in storms. Legacy mode's counts are exact where client-go loses
// occurrences, and every write it makes beyond client-go's is the last
// count of an event written without a spam-filter token
// (records{filter=exempt}): the count client-go never writes, so that an
// exact recorder cannot leave it out. There are at most as many as the
// occurrences client-go loses.
func TestLegacyWritesBeyondClientGoAreLastCounts(t *testing.T) {
	t.Parallel()
	storms := map[string][]storm.Occurrence{}
	for _, gap := range []time.Duration{10 * time.Second, time.Minute, 3 * time.Minute, 7 * time.Minute, 15 * time.Minute} {
		for seed := range uint64(2) {
			storms[fmt.Sprintf("scale-%v-%d", gap, seed)] = scaleStorm(seed, 20, gap)
		}
	}
	for _, name := range []string{"crashloop", "imagepull", "cronjob", "replicaset", "mixed"} {
		occs, err := storm.Scenario(name)
		require.NoError(t, err)
		storms[name] = occs
	}
	var report strings.Builder
	fmt.Fprintf(&report, "| storm | occurrences | legacy writes | client-go writes | without a token | client-go lost |\n|---|--:|--:|--:|--:|--:|\n")
	for _, name := range slices.Sorted(maps.Keys(storms)) {
		occs := storms[name]
		h := newHarness(t, func(cfg *Config) {
			eventTime(cfg)
			cfg.Mode = modeLegacy
			cfg.SpamFilter.QPS = float64(float32(1.0 / 300)) // client-go's float32 rate
		})
		h.feedStorm(occs)
		h.shutdown()
		ours := recordermodel.NewTally()
		for _, r := range h.records() {
			ev := r.event(t)
			if last, ok := ours.Last[ev.Name]; !ok || ev.Count > last {
				ours.Write(ev.Name, recordermodel.Pair{Object: ev.Regarding.Kind + "/" + ev.Regarding.Name, Reason: ev.Reason}, ev.Count)
			}
		}
		truth, cg := recordermodel.Truth(occs), recordermodel.Legacy(occs)
		errOurs, invisible := recordermodel.CountError(truth, ours.Counts())
		lost, _ := recordermodel.CountError(truth, cg.Counts())
		unfiltered := int(h.p.engine.Stats.Unfiltered)
		assert.Zero(t, errOurs+int64(invisible), "%s: exact final counts, every pair visible", name)
		assert.LessOrEqual(t, ours.Writes, cg.Writes+unfiltered, "%s: writes beyond client-go's are last counts without a token", name)
		assert.LessOrEqual(t, int64(unfiltered), lost, "%s: no more than client-go loses", name)
		fmt.Fprintf(&report, "| %s | %d | %d | %d | %d | %d |\n", name, len(occs), ours.Writes, cg.Writes, unfiltered, lost)
	}
	t.Log("\n" + report.String())
}
