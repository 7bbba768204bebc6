package k8sevent

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Sanitize repairs in place what can be repaired and reports what it
// repaired and what is fatal (no valid Event can be made of the record). It
// cuts long fields, spells a known type as written here and makes any other
// one Normal (Error and Critical stay what they are: see APIType), clamps
// negative counts, fills a zero time with the latest time the Event records,
// else now, drops a reporting controller the API server would refuse, and
// puts the Event in the namespace its regarding object allows.
func Sanitize(ev *Event, now time.Time) (repaired, fatal Problem) {
	var s Sanitizer
	return s.Sanitize(ev, now)
}

// Sanitizer is Sanitize with a memory of the last namespace and reporting
// controller it found valid: a stream names few of each, and their checks
// are regular expressions. The zero value is ready; one Sanitizer is for one
// goroutine at a time.
type Sanitizer struct{ namespace, controller string }

// Sanitize is the package's Sanitize, each check the same.
func (s *Sanitizer) Sanitize(ev *Event, now time.Time) (repaired, fatal Problem) {
	if ev.Regarding.Kind == "" || ev.Regarding.Name == "" {
		fatal |= ProblemMissingRegarding
	}
	if oversized(ev) {
		fatal |= ProblemOversized
	}
	if ns := ev.Namespace; ns != "" && ns != ev.Regarding.Namespace &&
		(ev.Regarding.Namespace != "" || ns != "default" && ns != "kube-system") {
		ev.Namespace = "" // the regarding object's, or default
		repaired |= ProblemNamespaceMismatch
	}
	switch ns := ev.ObjectNamespace(); {
	case ns == s.namespace:
	case len(validation.IsDNS1123Label(ns)) > 0:
		fatal |= ProblemBadNamespace
	default:
		s.namespace = ns
	}
	switch c := ev.ReportingController; {
	case c == "" || c == s.controller:
	case !isQualifiedName(c):
		ev.ReportingController = "" // a writer fills its own
		repaired |= ProblemBadController
	default:
		s.controller = c
	}
	if ev.Count < 0 || ev.SeriesCount < 0 {
		ev.Count, ev.SeriesCount = max(ev.Count, 0), max(ev.SeriesCount, 0)
		repaired |= ProblemNegativeCount
	}
	if ev.Time.IsZero() {
		if ev.Time = ev.LatestTime(); ev.Time.IsZero() {
			ev.Time = now
		}
		repaired |= ProblemZeroTime
	}
	if t := canonicalType(ev.Type); t != ev.Type {
		ev.Type = t
		repaired |= ProblemBadType
	}
	if len(ev.Note) > MaxNoteBytes {
		ev.Note = Truncate(ev.Note, MaxNoteBytes)
		repaired |= ProblemLongNote
	}
	for _, f := range [...]*string{&ev.Reason, &ev.Action, &ev.ReportingInstance} {
		if len(*f) > MaxFieldBytes {
			*f = Truncate(*f, MaxFieldBytes)
			repaired |= ProblemLongField
		}
	}
	if ev.Reason == "" {
		fatal |= ProblemMissingReason
	}
	return repaired, fatal
}

// oversized reports a name-like field longer than any real object's: such a
// record is refused whole, before a cache holds it or a write carries it,
// since cutting an identity would merge distinct objects.
func oversized(ev *Event) bool {
	return max(len(ev.Name), len(ev.Namespace), len(ev.UID), len(ev.SourceComponent), len(ev.SourceHost),
		len(ev.Regarding.Kind), len(ev.Regarding.Namespace), len(ev.Regarding.Name), len(ev.Regarding.UID),
		len(ev.Regarding.FieldPath), len(ev.Regarding.ResourceVersion),
		len(ev.Related.Kind), len(ev.Related.Namespace), len(ev.Related.Name), len(ev.Related.UID),
		len(ev.Related.FieldPath), len(ev.Related.ResourceVersion)) > MaxNameBytes ||
		max(len(ev.Regarding.APIVersion), len(ev.Related.APIVersion), len(ev.ReportingController)) > MaxQualifiedNameBytes
}
