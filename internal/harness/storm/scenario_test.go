package storm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

func TestScenarioNames(t *testing.T) {
	assert.Equal(t, []string{"crashloop", "imagepull", "failedscheduling", "cronjob", "replicaset", "churn", "mixed"}, ScenarioNames())
	for name := range Recorded {
		assert.Contains(t, ScenarioNames(), name, "every recorded scenario is a built-in one")
	}
	_, err := Scenario("nope")
	require.ErrorContains(t, err, `unknown scenario "nope"`)
	require.ErrorContains(t, err, "imagepull")
}

// TestScenariosAreValid: every built-in scenario is the same on every call,
// in time order, and every occurrence is an Event the API server accepts
// as it is (Sanitize has nothing to repair). The recorded storms are
// checked for order and determinism by TestScenariosAreDeterministicAndOrdered.
func TestScenariosAreValid(t *testing.T) {
	for _, name := range ScenarioNames() {
		t.Run(name, func(t *testing.T) {
			a, err := Scenario(name)
			require.NoError(t, err)
			require.NotEmpty(t, a)
			if _, recorded := Recorded[name]; !recorded {
				b, _ := Scenario(name)
				require.Equal(t, a, b)
				for i := 1; i < len(a); i++ {
					require.False(t, a[i].Time.Before(a[i-1].Time), "line %d out of order", i+1)
				}
			}
			for i := range a {
				ev := a[i].Event()
				repaired, fatal := k8sevent.Sanitize(&ev, Start)
				require.Zero(t, repaired|fatal, "line %d: %s", i+1, repaired|fatal)
				ev.Name = k8sevent.GenerateName(ev.Regarding.Name, ev.Time, ev.Reason)
				require.NoError(t, k8sevent.Validate(&ev, k8sevent.APICoreV1), "line %d", i+1)
				if ev.Action == "" {
					ev.Action = ev.Reason // as the exporter does for events.k8s.io
				}
				ev.EventTime = ev.Time
				require.NoError(t, k8sevent.Validate(&ev, k8sevent.APIEventsV1), "line %d", i+1)
			}
		})
	}
}

func TestNewScenariosHaveTheirShape(t *testing.T) {
	count := func(occs []Occurrence, reason string) (n int) {
		for _, o := range occs {
			if o.Reason == reason {
				n++
			}
		}
		return n
	}
	pull := ImagePull()
	assert.Positive(t, count(pull, "Pulling"))
	assert.Greater(t, count(pull, "BackOff"), count(pull, "Pulling"), "back-off is reported between pulls")
	// Back-off grows: the gaps between one pod's pulls double up to 5 minutes.
	var pulls []Occurrence
	for _, o := range pull {
		if o.Reason == "Pulling" && o.Regarding.Name == pull[0].Regarding.Name {
			pulls = append(pulls, o)
		}
	}
	require.Greater(t, len(pulls), 6)
	assert.Less(t, pulls[2].Time.Sub(pulls[1].Time), pulls[5].Time.Sub(pulls[4].Time))

	sched := FailedScheduling()
	messages := map[string]bool{}
	for _, o := range sched {
		if o.Reason == "FailedScheduling" {
			require.Equal(t, "Warning", o.Type)
			require.True(t, strings.HasPrefix(o.Note, "0/"), o.Note)
			messages[o.Note] = true
		}
	}
	assert.GreaterOrEqual(t, len(messages), 5, "the message follows the cluster")
	assert.Equal(t, 16, count(sched, "Scheduled"), "4 GPU nodes of 4 trainers")

	mixed := Mixed()
	assert.Greater(t, len(mixed), 2000)
	assert.Less(t, len(mixed), 10_000)
	namespaces := map[string]bool{}
	for _, o := range mixed {
		namespaces[o.Regarding.Namespace] = true
		assert.NotContains(t, o.Note, " shop/")
	}
	assert.Len(t, namespaces, 6)
}
