// Package k8sevent is the one Event model of the project and its codecs:
// core/v1 Event <-> Event <-> events.k8s.io/v1 Event, and Event <-> OTLP log
// record (the contract in the README). The receiver, the processor and the
// exporter all read and write records through this package only.
package k8sevent

import "time"

// Event types accepted by the API server.
const (
	TypeNormal  = "Normal"
	TypeWarning = "Warning"
)

// Event types the API server does not accept but emitters use and records
// keep (contrib's k8s_events receiver maps them to ERROR and FATAL): only a
// writer to the API server turns them into one it accepts (APIType).
const (
	TypeError    = "Error"
	TypeCritical = "Critical"
)

// Series states written by the eventseries processor.
const (
	StateSingleton = "singleton"
	StateStarted   = "started"
	StateOngoing   = "ongoing"
	StateFinished  = "finished"
)

// ObjectRef is the part of an object reference that Events carry.
type ObjectRef struct {
	Kind            string
	Namespace       string
	Name            string
	UID             string
	APIVersion      string
	FieldPath       string
	ResourceVersion string
}

// Cluster identifies a cluster as the semantic conventions do: its name
// (k8s.cluster.name, given by configuration) and the uid of its
// kube-system namespace (k8s.cluster.uid).
type Cluster struct {
	Name string
	UID  string
}

// String names the cluster: its name, else its uid, else "".
func (c Cluster) String() string {
	if c.Name != "" {
		return c.Name
	}
	return c.UID
}

// IsZero reports whether no field of the reference is set.
func (r ObjectRef) IsZero() bool { return r == ObjectRef{} }

// Event covers both Event APIs. Legacy (core/v1) and new (events.k8s.io/v1)
// names map onto one field each: Note is core/v1 message, SourceComponent is
// events.k8s.io deprecatedSource.component, Count is deprecatedCount, and so on.
type Event struct {
	// Metadata of the Event object itself.
	Name      string
	Namespace string // empty: derived from Regarding (see ObjectNamespace)
	UID       string

	Type   string
	Reason string
	Action string
	Note   string

	Regarding ObjectRef
	Related   ObjectRef // zero when absent

	// Cluster is the cluster the Event was recorded in; zero when unknown.
	Cluster Cluster

	ReportingController string
	ReportingInstance   string
	SourceComponent     string
	SourceHost          string

	// Time is the occurrence this record stands for (the log record timestamp).
	Time time.Time
	// EventTime is events.k8s.io eventTime: when the first occurrence was observed.
	EventTime      time.Time
	FirstTimestamp time.Time
	LastTimestamp  time.Time
	Count          int64 // legacy cumulative count; 0 when unset

	SeriesCount            int64 // 0 when the Event carries no series
	SeriesLastObservedTime time.Time

	// Written by the eventseries processor.
	SeriesState string
	Aggregated  bool
	// NewOccurrences: what this record adds to the occurrences of its
	// Event object since the object's previous record.
	NewOccurrences int64
}

// Description is what an Event says happened, to which object and by
// whom: every field of Event but the Event object's name and uid, its
// counts and times, and what the eventseries processor writes. Every
// record of one series states it alike, so a series keeps it and states
// it on the records no input carries (heartbeats, finishes). A field added
// to Event is added here and in the two functions below unless each Event
// object states it of its own; the processor's TestTimerRecordsCarryEveryField
// fails until it is.
type Description struct {
	Namespace                   string
	Type, Reason, Action, Note  string
	Regarding, Related          ObjectRef
	Cluster                     Cluster
	ReportingController         string
	ReportingInstance           string
	SourceComponent, SourceHost string
}

// Description is e's Description.
func (e *Event) Description() Description {
	return Description{Namespace: e.Namespace, Type: e.Type, Reason: e.Reason, Action: e.Action, Note: e.Note,
		Regarding: e.Regarding, Related: e.Related, Cluster: e.Cluster,
		ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		SourceComponent: e.SourceComponent, SourceHost: e.SourceHost}
}

// Event is an Event of d alone, every other field zero.
func (d *Description) Event() Event {
	return Event{Namespace: d.Namespace, Type: d.Type, Reason: d.Reason, Action: d.Action, Note: d.Note,
		Regarding: d.Regarding, Related: d.Related, Cluster: d.Cluster,
		ReportingController: d.ReportingController, ReportingInstance: d.ReportingInstance,
		SourceComponent: d.SourceComponent, SourceHost: d.SourceHost}
}

// ObjectNamespace is the namespace the Event object lives in: its own when
// set, else the regarding object's, else "default" (cluster-scoped objects),
// as client-go's recorders choose it.
func (e *Event) ObjectNamespace() string {
	switch {
	case e.Namespace != "":
		return e.Namespace
	case e.Regarding.Namespace != "":
		return e.Regarding.Namespace
	default:
		return "default"
	}
}

// LatestTime is the latest occurrence the Event records: series
// lastObservedTime, else lastTimestamp, else eventTime, else firstTimestamp.
func (e *Event) LatestTime() time.Time {
	switch {
	case !e.SeriesLastObservedTime.IsZero():
		return e.SeriesLastObservedTime
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return e.EventTime
	default:
		return e.FirstTimestamp
	}
}

// FirstTime is the first occurrence the Event records: eventTime, else
// firstTimestamp, else the occurrence time.
func (e *Event) FirstTime() time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp
	default:
		return e.Time
	}
}

// Occurrences is the cumulative number of occurrences the Event object
// states: the series count, else the legacy count, else 1.
func (e *Event) Occurrences() int64 {
	switch {
	case e.SeriesCount > 0:
		return e.SeriesCount
	case e.Count > 0:
		return e.Count
	default:
		return 1
	}
}
