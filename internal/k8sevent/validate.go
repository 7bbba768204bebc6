package k8sevent

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Limits the API server enforces on Events (pkg/apis/core/validation).
const (
	MaxNoteBytes  = 1024
	MaxFieldBytes = 128 // reason, action, reportingInstance

	// MaxNameBytes bounds every name-like field: the longest name any
	// Kubernetes object can have (a DNS subdomain). The API server leaves some
	// of these open (the regarding object's kind), which let a 100 KB kind
	// become a 1.3 MB Event; no real object has one.
	MaxNameBytes = 253
	// MaxQualifiedNameBytes bounds apiVersion and reportingController:
	// a DNS-subdomain prefix, a slash, a 63-byte name.
	MaxQualifiedNameBytes = 317
)

// API versions an Event is written with.
const (
	APICoreV1   = "v1"
	APIEventsV1 = "events.k8s.io/v1"
)

// Problem is a set of things wrong with a decoded Event.
type Problem uint32

const (
	ProblemMissingReason Problem = 1 << iota
	ProblemMissingRegarding
	ProblemBadNamespace
	ProblemNegativeCount
	ProblemZeroTime
	ProblemBadType
	ProblemLongNote
	ProblemLongField
	ProblemBadValue
	ProblemBadController
	ProblemNamespaceMismatch
	ProblemDuplicateKey
	ProblemOversized
)

// ProblemsFatal cannot be repaired: no valid Event can be made of the record.
const ProblemsFatal = ProblemMissingReason | ProblemMissingRegarding | ProblemBadNamespace | ProblemOversized

var problemNames = [...]string{
	"missing_reason", "missing_regarding", "bad_namespace", "negative_count",
	"zero_time", "bad_type", "long_note", "long_field", "bad_value",
	"bad_controller", "namespace_mismatch", "duplicate_key", "oversized_field",
}

// Each calls f with the metric name of every problem in p.
func (p Problem) Each(f func(name string)) {
	for i, name := range problemNames {
		if p&(1<<i) != 0 {
			f(name)
		}
	}
}

func (p Problem) String() string {
	var names []string
	p.Each(func(n string) { names = append(names, n) })
	return strings.Join(names, ",")
}

// isQualifiedName is validation.IsQualifiedName's rule (the API server's
// for a reporting controller) from apimachinery's rules that do not
// allocate; IsQualifiedName splits its argument, an allocation Sanitize
// would make on every record: an optional non-empty DNS-1123 subdomain and
// '/', then a non-empty label value (at most 63 bytes of alphanumerics,
// '-', '_' and '.', starting and ending with an alphanumeric).
func isQualifiedName(s string) bool {
	name := s
	if prefix, rest, found := strings.Cut(s, "/"); found {
		if len(validation.IsDNS1123Subdomain(prefix)) > 0 {
			return false
		}
		name = rest
	}
	return name != "" && len(validation.IsValidLabelValue(name)) == 0
}

// Truncate cuts s to at most n bytes without splitting a UTF-8 sequence;
// where s is not UTF-8 at the cut, it cuts at n. A cut string is a copy: a
// slice of s would keep all of s alive in whatever caches the result (a
// 100 KB note cut to 1 KB would still hold 100 KB).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			cut = i
			break
		}
	}
	return strings.Clone(s[:cut])
}

// GenerateName names the Event object of one series or compressed event:
// client-go's "<regarding name>.<hex of the first occurrence in ns>", with the
// 32-bit FNV-1a hash of the series key appended so that two series that
// start in the same nanosecond on one object (common in second-precision
// replays) never share an object. Where that is no DNS-1123 subdomain (the
// regarding name is none, or too long), the name is "event." and the time
// and hash in fixed-width hex. Deterministic: the same key and time give the
// same name, so a restored series and an earlier version's objects keep
// theirs.
func GenerateName(regardingName string, first time.Time, key string) string {
	return string(AppendName(nil, regardingName, first, []byte(key)))
}

// AppendName appends GenerateName's name to dst. key may be dst's own
// bytes: appending leaves the bytes already in dst as they are.
func AppendName(dst []byte, regardingName string, first time.Time, key []byte) []byte {
	fnv32a := fnv.New32a()
	_, _ = fnv32a.Write(key)
	h := fnv32a.Sum32()
	ns := uint64(first.UnixNano())
	var digits [16]byte
	hexTime := strconv.AppendUint(digits[:0], ns, 16)
	// The time and hash are a DNS label ([0-9a-f]+): the name is a DNS-1123
	// subdomain exactly when the regarding name is one and the whole fits.
	if len(regardingName)+1+len(hexTime)+8 <= validation.DNS1123SubdomainMaxLength &&
		len(validation.IsDNS1123Subdomain(regardingName)) == 0 {
		dst = append(append(append(dst, regardingName...), '.'), hexTime...)
	} else {
		dst = appendHex(append(dst, "event."...), ns, 16)
	}
	return appendHex(dst, uint64(h), 8)
}

// appendHex appends v in hex, zero-padded to width digits.
func appendHex(dst []byte, v uint64, width int) []byte {
	var digits [16]byte
	hex := strconv.AppendUint(digits[:0], v, 16)
	for range width - len(hex) {
		dst = append(dst, '0')
	}
	return append(dst, hex...)
}

// Validate reports what the API server would reject in a create of ev with
// the given API version (mirrors ValidateEventCreate of kube-apiserver
// v1.36, held against it by TestValidateAgreesWithTheAPIServer). For
// events.k8s.io/v1 the deprecated fields (source, count,
// first/last timestamp) are not checked: a writer leaves them unset.
func Validate(ev *Event, api string) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	ns := ev.ObjectNamespace()
	// A namespace is a DNS-1123 label: one that is not cannot exist.
	for _, msg := range validation.IsDNS1123Label(ns) {
		fail("namespace %q: %s", ns, msg)
	}
	nameRule := validation.IsDNS1123Subdomain
	if api == APICoreV1 {
		nameRule = path.IsValidPathSegmentName // core/v1 keeps its legacy names
	}
	if ev.Name == "" {
		fail("name: required")
	}
	for _, msg := range nameRule(ev.Name) {
		fail("name %q: %s", ev.Name, msg)
	}
	strict := api == APIEventsV1 || !ev.EventTime.IsZero()
	if !strict {
		if ev.Regarding.Namespace == "" && ns != "default" {
			fail("involvedObject.namespace: does not match event.namespace %q", ns)
		}
		if ev.Regarding.Namespace != "" && ns != ev.Regarding.Namespace {
			fail("involvedObject.namespace %q: does not match event.namespace %q", ev.Regarding.Namespace, ns)
		}
	} else {
		if ev.Regarding.Namespace == "" && ns != "default" && ns != "kube-system" {
			fail("regarding.namespace: cluster-scoped object needs event namespace default or kube-system, not %q", ns)
		}
		for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
			fail("reportingController %q: %s", ev.ReportingController, msg)
		}
		required := map[string]string{"reportingInstance": ev.ReportingInstance, "action": ev.Action, "reason": ev.Reason}
		for _, f := range []string{"reportingInstance", "action", "reason"} {
			switch v := required[f]; {
			case v == "":
				fail("%s: required", f)
			case len(v) > MaxFieldBytes:
				fail("%s: longer than %d bytes", f, MaxFieldBytes)
			}
		}
		if len(ev.Note) > MaxNoteBytes {
			fail("note: longer than %d bytes", MaxNoteBytes)
		}
	}
	if api == APIEventsV1 {
		if ev.EventTime.IsZero() {
			fail("eventTime: required")
		}
		if ev.Type != TypeNormal && ev.Type != TypeWarning {
			fail("type %q: must be Normal or Warning", ev.Type)
		}
		if ev.SeriesCount > 0 && (ev.SeriesCount < 2 || ev.SeriesLastObservedTime.IsZero()) { // none is written below 1
			fail("series: count must be at least 2 and lastObservedTime set, have %d", ev.SeriesCount)
		}
	}
	return errors.Join(errs...)
}

// knownTypes are the Event types a record keeps, in the spelling written.
var knownTypes = [...]string{TypeNormal, TypeWarning, TypeError, TypeCritical}

// canonicalType is t spelled as knownTypes spell it, in any case; any other
// type (empty, unknown) is Normal, as client-go's recorders treat it.
func canonicalType(t string) string {
	for _, k := range knownTypes {
		if strings.EqualFold(t, k) {
			return k
		}
	}
	return TypeNormal
}

// APIType is the type an API server accepts for t: Warning for Warning,
// Error and Critical (in any case), Normal for anything else. Only a writer
// to the API server calls it; records keep the type they were given.
func APIType(t string) string {
	switch canonicalType(t) {
	case TypeWarning, TypeError, TypeCritical:
		return TypeWarning
	default:
		return TypeNormal
	}
}
