package recorder

// EventName is the log record's EventName on every record this package
// writes: one low-cardinality name for "an occurrence of a Kubernetes
// Event", as OpenTelemetry's semantic conventions want events identified.
const EventName = "k8s.event"

// Attribute keys of the log-record contract (the repository README's
// table) that this package writes. They are a copy, not an import: an app
// importing this module must not pull the collector's modules. A test in
// the main module (internal/k8sevent/recorder_keys_test.go) parses these
// constants and checks each against the codec's own list, so the two
// cannot drift apart.
const (
	AttrReason              = "k8s.event.reason"
	AttrAction              = "k8s.event.action"
	AttrNamespace           = "k8s.namespace.name" // of the regarding object
	AttrObjectKind          = "k8s.object.kind"
	AttrObjectName          = "k8s.object.name"
	AttrObjectUID           = "k8s.object.uid"
	AttrObjectAPIVersion    = "k8s.object.api_version"
	AttrObjectFieldPath     = "k8s.object.fieldpath"
	AttrObjectResourceVer   = "k8s.object.resource_version"
	AttrSourceComponent     = "k8s.event.source.component"
	AttrSourceHost          = "k8s.event.source.host" // core/v1 source.host
	AttrReportingController = "k8s.event.reporting_controller"
	AttrReportingInstance   = "k8s.event.reporting_instance"
	AttrRelatedKind         = "k8s.event.related.kind"
	AttrRelatedName         = "k8s.event.related.name"
	AttrRelatedNamespace    = "k8s.event.related.namespace"
	AttrRelatedUID          = "k8s.event.related.uid"
	AttrRelatedAPIVersion   = "k8s.event.related.api_version"
	AttrRelatedFieldPath    = "k8s.event.related.fieldpath"
	AttrRelatedResourceVer  = "k8s.event.related.resource_version"
)

// AnnotationPrefix starts the attribute key of each annotation given to
// AnnotatedEventf: annotation "a/b" becomes attribute "k8s.event.annotation.a/b"
// (the naming of semantic conventions' k8s.pod.annotation.<key>). These are
// not contract keys: the collector's codec passes them by.
const AnnotationPrefix = "k8s.event.annotation."
