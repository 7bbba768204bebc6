package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxValueDepth is the deepest nesting of attribute values (AnyValue in
// AnyValue) a request may hold. pdata decodes nested values recursively,
// so a deep one costs a stack frame per level before anything can look at
// it; the contract needs at most an Event object as a body (a watch event
// holding the object, its metadata, a map in it, a managed field's few
// levels): 16 is about twice that.
const maxValueDepth = 16

// maxJSONDepth is maxValueDepth in OTLP/JSON brackets: a nested map value
// is four ({"kvlistValue":{"values":[{"value":...), plus the request's own
// levels down to an attribute.
const maxJSONDepth = 4*maxValueDepth + 12

// errTooDeep refuses a request nested deeper than the contract needs.
var errTooDeep = fmt.Errorf("attribute values nested deeper than %d levels", maxValueDepth)

// msgType is a message of the OTLP logs request that can hold an
// attribute value, directly or further down.
type msgType uint8

const (
	msgRequest msgType = iota + 1
	msgResourceLogs
	msgResource
	msgScopeLogs
	msgScope
	msgLogRecord
	msgKeyValue
	msgAnyValue
	msgArrayValue
	msgKeyValueList
)

// children are the fields of each message that hold one of the messages
// above (field numbers of opentelemetry/proto logs/v1, common/v1 and
// resource/v1); every other field is skipped unread.
var children = map[msgType]map[protowire.Number]msgType{
	msgRequest:      {1: msgResourceLogs},
	msgResourceLogs: {1: msgResource, 2: msgScopeLogs},
	msgResource:     {1: msgKeyValue},
	msgScopeLogs:    {1: msgScope, 2: msgLogRecord},
	msgScope:        {3: msgKeyValue},
	msgLogRecord:    {5: msgAnyValue, 6: msgKeyValue},
	msgKeyValue:     {2: msgAnyValue},
	msgAnyValue:     {5: msgArrayValue, 6: msgKeyValueList},
	msgArrayValue:   {1: msgAnyValue},
	msgKeyValueList: {1: msgKeyValue},
}

// frame is one message being scanned: its type, where it ends, and how
// many attribute values hold it.
type frame struct {
	typ   msgType
	end   int
	depth int
}

// checkProtoDepth scans an ExportLogsServiceRequest in protobuf without
// recursion and refuses one whose attribute values nest deeper than
// maxValueDepth, or that is no valid protobuf. It allocates one frame per
// level it enters, so at most maxValueDepth times a few.
func checkProtoDepth(b []byte) error {
	stack := []frame{{typ: msgRequest, end: len(b)}}
	pos := 0
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if pos == top.end {
			stack = stack[:len(stack)-1]
			continue
		}
		num, typ, n := protowire.ConsumeTag(b[pos:top.end])
		if n < 0 {
			return fmt.Errorf("decode request: %w", protowire.ParseError(n))
		}
		pos += n
		child, holds := children[top.typ][num]
		switch {
		case typ == protowire.StartGroupType || typ == protowire.EndGroupType:
			return errors.New("decode request: protobuf groups are not part of OTLP")
		case holds && typ == protowire.BytesType:
			size, n := protowire.ConsumeVarint(b[pos:top.end])
			if n < 0 || size > uint64(top.end-pos-n) {
				return errors.New("decode request: a field runs past its message")
			}
			pos += n
			depth := top.depth
			if child == msgAnyValue {
				if depth++; depth > maxValueDepth {
					return errTooDeep
				}
			}
			stack = append(stack, frame{typ: child, end: pos + int(size), depth: depth})
		default:
			n := protowire.ConsumeFieldValue(num, typ, b[pos:top.end])
			if n < 0 {
				return fmt.Errorf("decode request: %w", protowire.ParseError(n))
			}
			pos += n
		}
	}
	return nil
}

// checkJSONDepth refuses OTLP/JSON nested deeper than maxJSONDepth
// brackets, counting without recursion and outside strings; what is not
// valid JSON is left to the decoder.
func checkJSONDepth(b []byte) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > maxJSONDepth {
				return errTooDeep
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}
