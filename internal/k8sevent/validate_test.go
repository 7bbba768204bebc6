package k8sevent_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

var now = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// goodEvent is an Event both APIs accept.
func goodEvent() k8sevent.Event {
	return k8sevent.Event{
		Name:                "web-0.18a2b3c4d5e6f708",
		Type:                k8sevent.TypeWarning,
		Reason:              "BackOff",
		Action:              "Restarting",
		Note:                "restarting",
		Regarding:           k8sevent.ObjectRef{Kind: "Pod", Namespace: "prod", Name: "web-0", UID: "u1", APIVersion: "v1"},
		ReportingController: "kubernetes.io/kubelet",
		ReportingInstance:   "kubelet-node-a",
		Time:                tLast,
		EventTime:           tEvent,
	}
}

// TestAPIType: what a writer sends the API server for each type a record
// may keep; both APIs accept the result.
func TestAPIType(t *testing.T) {
	for in, want := range map[string]string{
		"Normal": k8sevent.TypeNormal, "Warning": k8sevent.TypeWarning, "Error": k8sevent.TypeWarning,
		"critical": k8sevent.TypeWarning, "": k8sevent.TypeNormal, "Info": k8sevent.TypeNormal,
	} {
		assert.Equal(t, want, k8sevent.APIType(in), in)
		ev := goodEvent()
		ev.Type = k8sevent.APIType(in)
		assert.NoError(t, k8sevent.Validate(&ev, k8sevent.APIEventsV1), in)
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(e *k8sevent.Event)
		repaired k8sevent.Problem
		fatal    k8sevent.Problem
		check    func(t *testing.T, e *k8sevent.Event)
		coreOnly bool // no eventTime left: events.k8s.io/v1 would reject it
	}{
		{name: "valid", mutate: func(*k8sevent.Event) {}},
		{name: "missing reason", mutate: func(e *k8sevent.Event) { e.Reason = "" }, fatal: k8sevent.ProblemMissingReason},
		{name: "missing regarding", mutate: func(e *k8sevent.Event) { e.Regarding = k8sevent.ObjectRef{} }, fatal: k8sevent.ProblemMissingRegarding},
		{name: "regarding without kind", mutate: func(e *k8sevent.Event) { e.Regarding.Kind = "" }, fatal: k8sevent.ProblemMissingRegarding},
		{name: "regarding without name", mutate: func(e *k8sevent.Event) { e.Regarding.Name = "" }, fatal: k8sevent.ProblemMissingRegarding},
		{name: "bad regarding namespace", mutate: func(e *k8sevent.Event) { e.Regarding.Namespace = "Bad_NS" }, fatal: k8sevent.ProblemBadNamespace},
		// An Event lives where its regarding object allows: a different own
		// namespace, valid or not, is replaced by the regarding object's.
		{name: "bad own namespace", mutate: func(e *k8sevent.Event) { e.Namespace = "Bad_NS" }, repaired: k8sevent.ProblemNamespaceMismatch},
		{name: "bad regarding namespace", mutate: func(e *k8sevent.Event) { e.Regarding.Namespace = "Bad_NS" }, fatal: k8sevent.ProblemBadNamespace},
		{
			name: "cluster-scoped object, event in another namespace",
			mutate: func(e *k8sevent.Event) {
				e.Regarding = k8sevent.ObjectRef{Kind: "Node", Name: "n1"}
				e.Namespace = "ns"
			},
			repaired: k8sevent.ProblemNamespaceMismatch,
		},
		{
			name: "cluster-scoped object, event in kube-system",
			mutate: func(e *k8sevent.Event) {
				e.Regarding = k8sevent.ObjectRef{Kind: "Node", Name: "n1"}
				e.Namespace = "kube-system"
			},
		},
		{
			name: "all fatal at once",
			mutate: func(e *k8sevent.Event) {
				e.Reason, e.Regarding = "", k8sevent.ObjectRef{Namespace: "Bad_NS", FieldPath: strings.Repeat("f", 254)}
			},
			fatal: k8sevent.ProblemsFatal,
		},
		{
			name: "names at their limit",
			mutate: func(e *k8sevent.Event) {
				e.Regarding.Kind = strings.Repeat("K", k8sevent.MaxNameBytes)
				e.ReportingController = strings.Repeat("c", k8sevent.MaxNameBytes-3) + ".io/" + strings.Repeat("n", 63)
			},
		},
		{
			name:     "negative counts",
			mutate:   func(e *k8sevent.Event) { e.Count, e.SeriesCount = -5, -1 },
			repaired: k8sevent.ProblemNegativeCount,
			check: func(t *testing.T, e *k8sevent.Event) {
				assert.Zero(t, e.Count)
				assert.Zero(t, e.SeriesCount)
			},
		},
		{
			name:     "negative count keeps positive series count",
			mutate:   func(e *k8sevent.Event) { e.Count, e.SeriesCount, e.SeriesLastObservedTime = -5, 3, tObserved },
			repaired: k8sevent.ProblemNegativeCount,
			check: func(t *testing.T, e *k8sevent.Event) {
				assert.Zero(t, e.Count)
				assert.Equal(t, int64(3), e.SeriesCount)
			},
		},
		{
			name:     "zero time from latest time",
			mutate:   func(e *k8sevent.Event) { e.Time, e.LastTimestamp = time.Time{}, tLast },
			repaired: k8sevent.ProblemZeroTime,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.True(t, e.Time.Equal(tLast)) },
		},
		{
			name:     "zero time from eventTime",
			mutate:   func(e *k8sevent.Event) { e.Time = time.Time{} },
			repaired: k8sevent.ProblemZeroTime,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.True(t, e.Time.Equal(tEvent)) },
		},
		{
			name:     "zero time from now",
			mutate:   func(e *k8sevent.Event) { e.Time, e.EventTime = time.Time{}, time.Time{} },
			repaired: k8sevent.ProblemZeroTime,
			coreOnly: true,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.True(t, e.Time.Equal(now)) },
		},
		{
			name:     "lowercase warning",
			mutate:   func(e *k8sevent.Event) { e.Type = "warning" },
			repaired: k8sevent.ProblemBadType,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Equal(t, k8sevent.TypeWarning, e.Type) },
		},
		{
			name:     "WARNING",
			mutate:   func(e *k8sevent.Event) { e.Type = "WARNING" },
			repaired: k8sevent.ProblemBadType,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Equal(t, k8sevent.TypeWarning, e.Type) },
		},
		{
			// Records keep Error and Critical: only a writer
			// makes them Warning (APIType), since events.k8s.io refuses them.
			name:     "Error stays Error",
			mutate:   func(e *k8sevent.Event) { e.Type = "Error" },
			coreOnly: true,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Equal(t, k8sevent.TypeError, e.Type) },
		},
		{
			name:     "CRITICAL is spelled Critical",
			mutate:   func(e *k8sevent.Event) { e.Type = "CRITICAL" },
			repaired: k8sevent.ProblemBadType,
			coreOnly: true,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Equal(t, k8sevent.TypeCritical, e.Type) },
		},
		{
			name:     "an unknown type becomes Normal",
			mutate:   func(e *k8sevent.Event) { e.Type = "Info" },
			repaired: k8sevent.ProblemBadType,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Equal(t, k8sevent.TypeNormal, e.Type) },
		},
		{
			name:     "empty type becomes Normal",
			mutate:   func(e *k8sevent.Event) { e.Type = "" },
			repaired: k8sevent.ProblemBadType,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Equal(t, k8sevent.TypeNormal, e.Type) },
		},
		{
			name:     "1 MB note",
			mutate:   func(e *k8sevent.Event) { e.Note = strings.Repeat("x", 1<<20) },
			repaired: k8sevent.ProblemLongNote,
			check: func(t *testing.T, e *k8sevent.Event) {
				assert.Len(t, e.Note, k8sevent.MaxNoteBytes)
			},
		},
		{
			name: "1 MB multi-byte note straddling the cut",
			// "a" then 3-byte runes: byte 1024 is the middle of a rune.
			mutate:   func(e *k8sevent.Event) { e.Note = "a" + strings.Repeat("€", 1<<20/3) },
			repaired: k8sevent.ProblemLongNote,
			check: func(t *testing.T, e *k8sevent.Event) {
				assert.LessOrEqual(t, len(e.Note), k8sevent.MaxNoteBytes)
				assert.Equal(t, 1+3*341, len(e.Note))
				assert.True(t, utf8.ValidString(e.Note))
			},
		},
		{
			name: "4-byte runes straddling the cut",
			mutate: func(e *k8sevent.Event) {
				e.Note = "ab" + strings.Repeat("😀", 400)
			},
			repaired: k8sevent.ProblemLongNote,
			check: func(t *testing.T, e *k8sevent.Event) {
				assert.Equal(t, 2+4*255, len(e.Note))
				assert.True(t, utf8.ValidString(e.Note))
			},
		},
		{
			name:     "note of exactly 1024 bytes kept",
			mutate:   func(e *k8sevent.Event) { e.Note = strings.Repeat("é", 512) },
			repaired: 0,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Len(t, e.Note, 1024) },
		},
		{
			name:     "reason of 200 bytes",
			mutate:   func(e *k8sevent.Event) { e.Reason = strings.Repeat("R", 200) },
			repaired: k8sevent.ProblemLongField,
			check:    func(t *testing.T, e *k8sevent.Event) { assert.Len(t, e.Reason, k8sevent.MaxFieldBytes) },
		},
		{
			name: "long action and reporting instance",
			mutate: func(e *k8sevent.Event) {
				e.Action = strings.Repeat("ä", 100)
				e.ReportingInstance = strings.Repeat("i", 129)
			},
			repaired: k8sevent.ProblemLongField,
			check: func(t *testing.T, e *k8sevent.Event) {
				assert.Len(t, e.Action, k8sevent.MaxFieldBytes)
				assert.True(t, utf8.ValidString(e.Action))
				assert.Len(t, e.ReportingInstance, k8sevent.MaxFieldBytes)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := goodEvent()
			tt.mutate(&ev)
			repaired, fatal := k8sevent.Sanitize(&ev, now)
			assert.Equal(t, tt.repaired, repaired, "repaired %v", repaired)
			assert.Equal(t, tt.fatal, fatal, "fatal %v", fatal)
			if tt.check != nil {
				tt.check(t, &ev)
			}
			if fatal == 0 {
				if !tt.coreOnly {
					assert.NoError(t, k8sevent.Validate(&ev, k8sevent.APIEventsV1))
				}
				assert.NoError(t, k8sevent.Validate(&ev, k8sevent.APICoreV1))
				// Sanitize is idempotent.
				again := ev
				r2, f2 := k8sevent.Sanitize(&again, now)
				assert.Zero(t, r2)
				assert.Zero(t, f2)
				assert.Equal(t, ev, again)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 0, ""},
		{"abc", 3, "abc"},
		{"abc", 5, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"aé", 2, "a"},
		{"aé", 3, "aé"},
		{"€€", 4, "€"},
		{"€€", 5, "€"},
		{"€€", 2, ""},
		{"😀x", 3, ""},
		{"😀x", 4, "😀"},
	}
	for _, tt := range tests {
		got := k8sevent.Truncate(tt.s, tt.n)
		assert.Equal(t, tt.want, got, "Truncate(%q, %d)", tt.s, tt.n)
		assert.LessOrEqual(t, len(got), tt.n)
	}
	// Every cut of a valid multi-byte string stays valid.
	s := strings.Repeat("aé€😀", 50)
	for n := 0; n <= len(s); n++ {
		got := k8sevent.Truncate(s, n)
		require.LessOrEqual(t, len(got), n)
		require.True(t, utf8.ValidString(got), "n=%d", n)
		require.True(t, strings.HasPrefix(s, got))
		require.Greater(t, len(got), n-4, "cuts at most one rune")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(e *k8sevent.Event)
		api     string
		wantErr string // empty: valid
	}{
		{name: "good events v1", api: k8sevent.APIEventsV1, mutate: func(*k8sevent.Event) {}},
		{name: "good core v1", api: k8sevent.APICoreV1, mutate: func(*k8sevent.Event) {}},
		{name: "events v1 needs eventTime", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.EventTime = time.Time{} }, wantErr: "eventTime: required"},
		{name: "events v1 needs reportingController", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.ReportingController = "" }, wantErr: "reportingController"},
		{name: "reportingController must be a qualified name", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.ReportingController = "not a/qualified/name" }, wantErr: "reportingController"},
		{name: "reportingController with bad prefix", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.ReportingController = "Bad_Prefix/kubelet" }, wantErr: "reportingController"},
		{name: "events v1 needs reportingInstance", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.ReportingInstance = "" }, wantErr: "reportingInstance: required"},
		{name: "events v1 needs action", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.Action = "" }, wantErr: "action: required"},
		{name: "events v1 needs reason", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.Reason = "" }, wantErr: "reason: required"},
		{name: "long action", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.Action = strings.Repeat("a", 129) }, wantErr: "action: longer than 128"},
		{name: "long note", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.Note = strings.Repeat("n", 1025) }, wantErr: "note: longer than 1024"},
		{name: "bad type", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.Type = "Error" }, wantErr: "type"},
		{name: "series count 1", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.SeriesCount, e.SeriesLastObservedTime = 1, tObserved }, wantErr: "series"},
		{name: "series without lastObservedTime", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.SeriesCount = 3 }, wantErr: "series"},
		{name: "series count 2", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.SeriesCount, e.SeriesLastObservedTime = 2, tObserved }},
		{
			name: "cluster-scoped regarding in default", api: k8sevent.APIEventsV1,
			mutate: func(e *k8sevent.Event) { e.Regarding = k8sevent.ObjectRef{Kind: "Node", Name: "node-a"} },
		},
		{
			name: "cluster-scoped regarding in kube-system", api: k8sevent.APIEventsV1,
			mutate: func(e *k8sevent.Event) {
				e.Namespace, e.Regarding = "kube-system", k8sevent.ObjectRef{Kind: "Node", Name: "node-a"}
			},
		},
		{
			name: "cluster-scoped regarding in other namespace", api: k8sevent.APIEventsV1,
			mutate: func(e *k8sevent.Event) {
				e.Namespace, e.Regarding = "prod", k8sevent.ObjectRef{Kind: "Node", Name: "node-a"}
			},
			wantErr: "cluster-scoped",
		},
		{
			name: "core v1 with eventTime is strict too", api: k8sevent.APICoreV1,
			mutate: func(e *k8sevent.Event) { e.Action = "" }, wantErr: "action: required",
		},
		{
			name: "core v1 without eventTime is lenient", api: k8sevent.APICoreV1,
			mutate: func(e *k8sevent.Event) {
				e.EventTime, e.Action, e.ReportingController, e.ReportingInstance = time.Time{}, "", "", ""
				e.SeriesCount = 1 // series is only checked for events.k8s.io
			},
		},
		{
			name: "core v1 lenient cluster-scoped needs default", api: k8sevent.APICoreV1,
			mutate: func(e *k8sevent.Event) {
				e.EventTime, e.Namespace, e.Regarding = time.Time{}, "kube-system", k8sevent.ObjectRef{Kind: "Node", Name: "node-a"}
			},
			wantErr: "involvedObject.namespace",
		},
		{
			name: "core v1 lenient namespace mismatch", api: k8sevent.APICoreV1,
			mutate:  func(e *k8sevent.Event) { e.EventTime, e.Namespace = time.Time{}, "other" },
			wantErr: "does not match",
		},
		{name: "bad namespace", api: k8sevent.APICoreV1, mutate: func(e *k8sevent.Event) { e.Regarding.Namespace = "Bad_NS" }, wantErr: "namespace"},
		{name: "bad name", api: k8sevent.APIEventsV1, mutate: func(e *k8sevent.Event) { e.Name = "Web-0" }, wantErr: "name"},
		{name: "empty name", api: k8sevent.APICoreV1, mutate: func(e *k8sevent.Event) { e.Name = "" }, wantErr: "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := goodEvent()
			tt.mutate(&ev)
			err := k8sevent.Validate(&ev, tt.api)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestGenerateName(t *testing.T) {
	first := time.Date(2026, 3, 1, 12, 0, 0, 123, time.UTC)

	name := k8sevent.GenerateName("web-0", first, "key-a")
	assert.Empty(t, validation.IsDNS1123Subdomain(name), name)
	assert.True(t, strings.HasPrefix(name, "web-0."), name)
	assert.Equal(t, name, k8sevent.GenerateName("web-0", first, "key-a"), "deterministic")

	other := k8sevent.GenerateName("web-0", first, "key-b")
	assert.NotEqual(t, name, other, "different keys at the same time")
	assert.Empty(t, validation.IsDNS1123Subdomain(other))
	assert.NotEqual(t, name, k8sevent.GenerateName("web-0", first.Add(time.Nanosecond), "key-a"), "different times")
	assert.NotEqual(t, name, k8sevent.GenerateName("web-1", first, "key-a"), "different objects")

	seen := map[string]bool{}
	for i := range 1000 {
		n := k8sevent.GenerateName("web-0", first, "key-"+string(rune('a'+i%26))+strings.Repeat("x", i/26))
		require.False(t, seen[n], "collision %s", n)
		seen[n] = true
	}

	for _, bad := range []string{"Web-0", strings.Repeat("a", 250), "", "has_underscore", "-leading", "a..b"} {
		n := k8sevent.GenerateName(bad, first, "key-a")
		assert.Empty(t, validation.IsDNS1123Subdomain(n), "%q -> %q", bad, n)
		assert.True(t, strings.HasPrefix(n, "event."), "%q -> %q", bad, n)
		assert.Equal(t, n, k8sevent.GenerateName(bad, first, "key-a"))
		assert.NotEqual(t, n, k8sevent.GenerateName(bad, first, "key-b"))
	}

	// A long but valid name whose suffix pushes it over 253 bytes.
	long := strings.Repeat("a", 240)
	n := k8sevent.GenerateName(long, first, "k")
	assert.Empty(t, validation.IsDNS1123Subdomain(n), n)
	assert.LessOrEqual(t, len(n), validation.DNS1123SubdomainMaxLength)

	// Times before 1970 and the zero time still give valid names.
	for _, tm := range []time.Time{{}, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)} {
		n := k8sevent.GenerateName("web-0", tm, "k")
		assert.Empty(t, validation.IsDNS1123Subdomain(n), n)
	}
}
