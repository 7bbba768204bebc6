package recorder

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	corev1 "k8s.io/api/core/v1"
)

// ScopeName is the instrumentation scope of the records.
const ScopeName = "github.com/k8sevents/otel-k8sevents/recorder"

// encoder turns entries into SDK records through an SDK Logger, so that
// the records carry the provider's resource, scope and attribute limits
// exactly as any SDK user's would. Only the worker goroutine uses it.
type encoder struct {
	logger     log.Logger
	collected  *collector
	sourceHost string // Options.SourceHost, on tools/record records
}

func newEncoder(res *resource.Resource, sourceHost string) *encoder {
	c := &collector{}
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(c))
	return &encoder{logger: lp.Logger(ScopeName), collected: c, sourceHost: sourceHost}
}

// encode appends the records of entries to dst.
func (enc *encoder) encode(dst []sdklog.Record, entries []entry) []sdklog.Record {
	enc.collected.records = dst
	var rec log.Record
	for i := range entries {
		rec = log.Record{}
		fillRecord(&rec, &entries[i], enc.sourceHost)
		enc.logger.Emit(context.Background(), rec)
	}
	out := enc.collected.records
	enc.collected.records = nil
	return out
}

// fillRecord writes one entry per the log-record contract: the note as
// body, the type as severity, the call's time as timestamp, the regarding
// and related objects, reason, action, reporter and annotations as
// attributes; a tools/record entry also the core/v1 source (component and
// sourceHost, when not empty), as client-go's tools/record fills it.
func fillRecord(rec *log.Record, e *entry, sourceHost string) {
	rec.SetEventName(EventName)
	rec.SetTimestamp(e.at)
	rec.SetObservedTimestamp(e.at)
	rec.SetBody(attribute.StringValue(e.note))
	rec.SetSeverityText(e.eventType)
	if e.eventType == corev1.EventTypeWarning {
		rec.SetSeverity(log.SeverityWarn)
	} else {
		rec.SetSeverity(log.SeverityInfo)
	}
	kv := make([]attribute.KeyValue, 0, 24+len(e.annotations))
	kv = append(kv, attribute.String(AttrReason, e.reason))
	kv = appendNonEmpty(kv, AttrAction, e.action)
	// The regarding object's namespace is written even when empty (a
	// cluster-scoped object): the codec reads the resource's attributes
	// too, and an app's resource often names its own pod's namespace.
	kv = append(kv, attribute.String(AttrNamespace, e.regarding.Namespace))
	kv = appendRef(kv, e.regarding, &refKeys{AttrObjectKind, AttrObjectName, "", AttrObjectUID, AttrObjectAPIVersion, AttrObjectFieldPath, AttrObjectResourceVer})
	if e.related != nil {
		kv = appendRef(kv, e.related, &refKeys{AttrRelatedKind, AttrRelatedName, AttrRelatedNamespace, AttrRelatedUID, AttrRelatedAPIVersion, AttrRelatedFieldPath, AttrRelatedResourceVer})
	}
	kv = append(kv, attribute.String(AttrReportingController, e.controller))
	kv = appendNonEmpty(kv, AttrReportingInstance, e.instance)
	if e.legacy {
		kv = append(kv, attribute.String(AttrSourceComponent, e.controller))
		kv = appendNonEmpty(kv, AttrSourceHost, sourceHost)
	}
	for k, v := range e.annotations {
		kv = append(kv, attribute.String(AnnotationPrefix+k, v))
	}
	rec.AddAttributes(kv...)
}

// refKeys are the attribute keys of one object reference; an empty key is
// not written.
type refKeys struct {
	kind, name, namespace, uid, apiVersion, fieldPath, resourceVersion string
}

func appendRef(kv []attribute.KeyValue, ref *corev1.ObjectReference, k *refKeys) []attribute.KeyValue {
	kv = appendNonEmpty(kv, k.kind, ref.Kind)
	kv = appendNonEmpty(kv, k.name, ref.Name)
	if k.namespace != "" {
		kv = appendNonEmpty(kv, k.namespace, ref.Namespace)
	}
	kv = appendNonEmpty(kv, k.uid, string(ref.UID))
	kv = appendNonEmpty(kv, k.apiVersion, ref.APIVersion)
	kv = appendNonEmpty(kv, k.fieldPath, ref.FieldPath)
	return appendNonEmpty(kv, k.resourceVersion, ref.ResourceVersion)
}

func appendNonEmpty(kv []attribute.KeyValue, k, v string) []attribute.KeyValue {
	if v == "" {
		return kv
	}
	return append(kv, attribute.String(k, v))
}

// collector is the SDK processor behind the encoder: it keeps copies of
// the records emitted (the SDK reuses a record after OnEmit returns).
type collector struct{ records []sdklog.Record }

func (c *collector) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.records = append(c.records, r.Clone())
	return nil
}

func (c *collector) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (c *collector) Shutdown(context.Context) error                         { return nil }
func (c *collector) ForceFlush(context.Context) error                       { return nil }
