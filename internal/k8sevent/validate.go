package k8sevent

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

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

// isDNS1123Label is the rule a namespace name follows, without the regular
// expression apimachinery uses (a quarter of the processor's time per record).
func isDNS1123Label(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123LabelMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// isQualifiedName is validation.IsQualifiedName's rule without its regular
// expression, which cost more than the rest of a record's decisions (every
// events.k8s.io record names its reporting controller): an optional
// DNS-1123 subdomain and '/', then a name of at most 63 bytes of
// alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric.
func isQualifiedName(s string) bool {
	name := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		prefix := s[:i]
		name = s[i+1:]
		if prefix == "" || !isDNS1123Subdomain(unsafe.Slice(unsafe.StringData(prefix), len(prefix))) {
			return false
		}
	}
	if len(name) == 0 || len(name) > 63 { // the name part of a qualified name
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' && c != '_' && c != '.' || i == 0 || i == len(name)-1) {
			return false
		}
	}
	return true
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
// hash of the series key appended so that two series that start in the same
// nanosecond on one object (common in second-precision replays) never share
// an object. Deterministic: the same key and time give the same name.
func GenerateName(regardingName string, first time.Time, key string) string {
	// One allocation: a new series per record (a storm of new objects) names one each.
	b := AppendGeneratedName(make([]byte, 0, generatedNameLen(regardingName, first)), regardingName, first, key, "")
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not used again
}

// AppendGeneratedName appends GenerateName(regardingName, first, key+suffix)
// to dst: a caller that keeps the name with other bytes of its own (the
// engine, with the packed series) makes one allocation for both, and
// joins key and suffix without a copy.
func AppendGeneratedName(dst []byte, regardingName string, first time.Time, key, suffix string) []byte {
	h, ns := fnv32aMore(fnv32aMore(fnvOffset32, key), suffix), uint64(first.UnixNano())
	// The suffix, a dot and lower-case hex digits, is a valid DNS-1123
	// label: the name is a valid subdomain when the regarding name is one
	// and the whole fits, so only the regarding name is checked.
	digits := max((bits.Len64(ns)+3)/4, 1)
	n := len(regardingName) + 1 + digits + 8
	if n > validation.DNS1123SubdomainMaxLength ||
		!isDNS1123Subdomain(unsafe.Slice(unsafe.StringData(regardingName), len(regardingName))) {
		return fmt.Appendf(dst, "event.%016x%08x", ns, h)
	}
	at := len(dst)
	dst = append(dst, regardingName...)
	dst = append(dst, '.')
	dst = append(dst, make([]byte, digits+8)...) // no allocation: append grows dst by the zeros
	putHex(dst[at+len(regardingName)+1:at+n-8], ns)
	putHex(dst[at+n-8:at+n], uint64(h))
	return dst
}

// generatedNameLen is the length of GenerateName's result.
func generatedNameLen(regardingName string, first time.Time) int {
	digits := max((bits.Len64(uint64(first.UnixNano()))+3)/4, 1)
	if n := len(regardingName) + 1 + digits + 8; n <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	return len("event.") + 16 + 8
}

// putHex writes the low len(b) hex digits of v into b, most significant
// first, in lower case (strconv's base 16 when b has room for exactly its
// digits): two digits per step, from a table of the 256 pairs.
func putHex(b []byte, v uint64) {
	i := len(b)
	for ; i >= 2; i -= 2 {
		p := &hexPairs[v&0xff]
		b[i-2], b[i-1] = p[0], p[1]
		v >>= 8
	}
	if i == 1 {
		b[0] = hexPairs[v&0xf][1]
	}
}

var hexPairs = func() (pairs [256][2]byte) {
	const digits = "0123456789abcdef"
	for i := range pairs {
		pairs[i] = [2]byte{digits[i>>4], digits[i&0xf]}
	}
	return pairs
}()

// isDNS1123Subdomain is validation.IsDNS1123Subdomain's rule without its
// regular expression (a tenth of a churning series' cost): at most 253
// bytes, dot-separated labels of lower-case alphanumerics and '-', each
// starting and ending with an alphanumeric. Each byte's class comes from
// a table.
func isDNS1123Subdomain(name []byte) bool {
	if len(name) == 0 || len(name) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	start := 0
	for i, c := range name {
		switch dnsClass[c] {
		case dnsOther:
			return false
		case dnsDot:
			if i == start || name[start] == '-' || name[i-1] == '-' {
				return false
			}
			start = i + 1
		}
	}
	return start < len(name) && name[start] != '-' && name[len(name)-1] != '-'
}

const (
	dnsOther = iota
	dnsAlnum
	dnsDash
	dnsDot
)

var dnsClass = func() (class [256]uint8) {
	for c := range class {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			class[c] = dnsAlnum
		case c == '-':
			class[c] = dnsDash
		case c == '.':
			class[c] = dnsDot
		}
	}
	return class
}()

const fnvOffset32 = 2166136261

// fnv32aMore continues a 32-bit FNV-1a hash h over s, 8 bytes per step
// by index (re-slicing s per step was 40% of it).
func fnv32aMore(h uint32, s string) uint32 {
	const prime = 16777619
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := b[i : i+8 : i+8]
		h = (h ^ uint32(w[0])) * prime
		h = (h ^ uint32(w[1])) * prime
		h = (h ^ uint32(w[2])) * prime
		h = (h ^ uint32(w[3])) * prime
		h = (h ^ uint32(w[4])) * prime
		h = (h ^ uint32(w[5])) * prime
		h = (h ^ uint32(w[6])) * prime
		h = (h ^ uint32(w[7])) * prime
	}
	for ; i < len(b); i++ {
		h = (h ^ uint32(b[i])) * prime
	}
	return h
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
	switch t { // as written, nearly always: no case folding
	case TypeNormal, TypeWarning, TypeError, TypeCritical:
		return t
	}
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
