package sim

import (
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/apimodel"
)

// FaultKind is how the API server answers a process's requests while a
// fault is in force.
type FaultKind string

const (
	// FaultDown: no answer at all (the server is down, or the network
	// between them): every request fails with a connection reset.
	FaultDown FaultKind = "down"
	// FaultUnavailable: every request answers 503.
	FaultUnavailable FaultKind = "503"
	// FaultThrottled: writes answer 429 with Retry-After.
	FaultThrottled FaultKind = "429"
	// FaultForbidden: writes answer 403 from a server that says it is
	// ready (exceeded quota, a webhook that denies for a while).
	FaultForbidden FaultKind = "403"
	// FaultStarting: the server has just started: 403 to what RBAC
	// allows, /readyz failing.
	FaultStarting FaultKind = "starting"
	// FaultHalfSynced: the server is further into its start: its
	// RoleBindings have not synced, so a SubjectAccessReview of a user
	// allowed in one namespace answers denied, and /readyz fails.
	FaultHalfSynced FaultKind = "half-synced"
	// FaultLostAnswer: writes are applied, then the answer is lost (a
	// timeout after the server applied the write).
	FaultLostAnswer FaultKind = "lost-answer"
	// FaultTimeout: writes time out before the server sees them.
	FaultTimeout FaultKind = "timeout"
)

// apiFault is a fault in force: for proc ("" every process), until a
// virtual time or for a number of requests.
type apiFault struct {
	kind  FaultKind
	proc  string
	until time.Time // zero: until left runs out
	left  int       // requests still affected, when until is zero
}

func (f *apiFault) expired(now time.Time) bool {
	if f.until.IsZero() {
		return f.left <= 0
	}
	return !now.Before(f.until)
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete":
		return true
	}
	return false
}

// decide answers a request of proc with the first fault in force that
// applies to it, or nil.
func (w *World) decide(proc string, r apimodel.Request) *apimodel.Fault {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for _, f := range w.faults {
		if f.expired(now) || f.proc != "" && f.proc != proc {
			continue
		}
		fault := faultFor(f.kind, r)
		if fault == nil {
			continue
		}
		if f.until.IsZero() {
			f.left--
		}
		return fault
	}
	return nil
}

// faultFor is what kind does to request r; nil when it leaves r alone.
func faultFor(kind FaultKind, r apimodel.Request) *apimodel.Fault {
	eventWrite := isWrite(r.Verb) && r.Resource == "events"
	switch kind {
	case FaultDown:
		return &apimodel.Fault{Reset: true}
	case FaultUnavailable:
		return &apimodel.Fault{Status: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable, Message: "the server is currently unable to handle the request"}
	case FaultThrottled:
		if eventWrite {
			return &apimodel.Fault{Status: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests, Message: "too many requests", RetryAfter: 2 * time.Second}
		}
	case FaultForbidden:
		if eventWrite {
			return &apimodel.Fault{Status: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `events "x" is forbidden: exceeded quota: events-quota, requested: count/events.events.k8s.io=1, used: count/events.events.k8s.io=1000, limited: count/events.events.k8s.io=1000`}
		}
	case FaultLostAnswer:
		if eventWrite {
			return &apimodel.Fault{TimeoutAfter: true}
		}
	case FaultTimeout:
		if eventWrite {
			return &apimodel.Fault{TimeoutBefore: true}
		}
	}
	return nil
}

// expireFaults forgets the faults that ended, and puts the server's start
// in the state the faults in force say.
func (w *World) expireFaults() {
	w.mu.Lock()
	now := time.Now()
	starting, halfSynced := false, false
	kept := w.faults[:0]
	for _, f := range w.faults {
		if !f.expired(now) {
			kept = append(kept, f)
			starting = starting || f.kind == FaultStarting
			halfSynced = halfSynced || f.kind == FaultHalfSynced
		}
	}
	w.faults = kept
	w.mu.Unlock()
	w.api.SetReady(!starting)
	w.api.SetRoleBindingsSynced(!halfSynced)
}

// addFault puts f in force; one that lasts a time ends at its time, not at
// the next step.
func (w *World) addFault(f *apiFault) {
	w.mu.Lock()
	w.faults = append(w.faults, f)
	w.mu.Unlock()
	w.expireFaults()
	if !f.until.IsZero() {
		time.AfterFunc(time.Until(f.until), w.expireFaults)
	}
}
