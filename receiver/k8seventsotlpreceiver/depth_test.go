package k8seventsotlpreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

// nestedRequest is a request with one record whose attribute and body nest
// depth values (alternating maps and arrays), built by pdata.
func nestedRequest(depth int) plogotlp.ExportRequest {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "app")
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	for _, v := range []pcommon.Value{lr.Attributes().PutEmpty("k"), lr.Body()} {
		for i := 1; i < depth; i++ {
			if i%2 == 0 {
				v = v.SetEmptySlice().AppendEmpty()
			} else {
				v = v.SetEmptyMap().PutEmpty("k")
			}
		}
		v.SetStr("leaf")
	}
	return plogotlp.NewExportRequestFromLogs(ld)
}

// TestDepthCheckedWithoutDecoding: a request whose values nest
// maxValueDepth deep passes, in protobuf and JSON, and decodes; one level
// more is refused; so is the 100,000-deep payload of the hostile tests,
// which pdata would decode recursively.
func TestDepthCheckedWithoutDecoding(t *testing.T) {
	for _, depth := range []int{1, 2, maxValueDepth} {
		pb, err := nestedRequest(depth).MarshalProto()
		require.NoError(t, err)
		assert.NoError(t, checkProtoDepth(pb), "protobuf, depth %d", depth)
		js, err := nestedRequest(depth).MarshalJSON()
		require.NoError(t, err)
		assert.NoError(t, checkJSONDepth(js), "json, depth %d", depth)
	}
	pb, err := nestedRequest(maxValueDepth + 1).MarshalProto()
	require.NoError(t, err)
	assert.ErrorIs(t, checkProtoDepth(pb), errTooDeep)
	js, err := nestedRequest(3*maxValueDepth + 1).MarshalJSON()
	require.NoError(t, err)
	assert.ErrorIs(t, checkJSONDepth(js), errTooDeep)

	require.NoError(t, plogotlp.NewExportRequest().UnmarshalProto(deepArrays(maxValueDepth-1)), "the hand-built payload is OTLP")
	assert.NoError(t, checkProtoDepth(deepArrays(maxValueDepth-1)), "the leaf is one more value")
	assert.ErrorIs(t, checkProtoDepth(deepArrays(maxValueDepth)), errTooDeep)
	assert.ErrorIs(t, checkProtoDepth(deepArrays(100_000)), errTooDeep)
	assert.ErrorIs(t, checkJSONDepth([]byte(`{"a":"[[[[[[","b":`+string(deepJSON(200))+`}`)), errTooDeep)
	assert.NoError(t, checkJSONDepth([]byte(`{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"{{{"}`)),
		"brackets in a string do not count")
}

// TestDepthCheckRefusesBrokenProtobuf: truncated, a length past its
// message, a group: refused before pdata sees them.
func TestDepthCheckRefusesBrokenProtobuf(t *testing.T) {
	pb, err := nestedRequest(4).MarshalProto()
	require.NoError(t, err)
	assert.Error(t, checkProtoDepth(pb[:len(pb)-3]), "truncated")
	assert.Error(t, checkProtoDepth([]byte{0x0a, 0x05, 0x0a}), "a length past the end")
	assert.Error(t, checkProtoDepth([]byte{0x0b}), "a group")
	assert.NoError(t, checkProtoDepth(nil), "an empty request")
}

// deepArrays is a request of one record whose attribute nests depth
// array values.
func deepArrays(depth int) []byte { return wrapRecord(nestedArrays(depth)) }

// nestedArrays is an AnyValue nesting depth array values, built outside in.
func nestedArrays(depth int) []byte {
	leaf := []byte{0x0a, 0x01, 'x'} // string_value "x"
	lens := make([]int, depth+1)
	lens[0] = len(leaf)
	for i := 1; i <= depth; i++ {
		arr := 1 + varintLen(lens[i-1]) + lens[i-1] // ArrayValue{values}
		lens[i] = 1 + varintLen(arr) + arr          // AnyValue{array_value}
	}
	out := make([]byte, 0, lens[depth])
	for i := depth; i >= 1; i-- {
		arr := 1 + varintLen(lens[i-1]) + lens[i-1]
		out = appendVarint(append(out, 0x2a), arr)       // AnyValue.array_value (5)
		out = appendVarint(append(out, 0x0a), lens[i-1]) // ArrayValue.values (1)
	}
	return append(out, leaf...)
}

// wrapRecord puts value as attribute "k" of one record of one request.
func wrapRecord(value []byte) []byte {
	wrap := func(field byte, b []byte) []byte { return append(appendVarint([]byte{field<<3 | 2}, len(b)), b...) }
	kv := append(wrap(1, []byte("k")), wrap(2, value)...)
	return wrap(1, wrap(2, wrap(2, wrap(6, kv))))
}

func varintLen(n int) int { return len(appendVarint(nil, n)) }

func appendVarint(b []byte, n int) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

func deepJSON(depth int) []byte {
	out := make([]byte, 0, 2*depth)
	for range depth {
		out = append(out, '[')
	}
	for range depth {
		out = append(out, ']')
	}
	return out
}
