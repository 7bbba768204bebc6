package k8sevent

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"math/bits"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// referenceDecodeAttributes is DecodeAttributes as it was before the key
// table held each key's field offset and word offsets (main at 47360c7):
// the tests hold the decoder to it on random maps.
func referenceDecodeAttributes(attrs pcommon.Map, dst *Event, opts DecodeOptions) (problems Problem, found bool) {
	// One pass: a table lookup and a compare find each contract key, a
	// string is stored at its field's offset, other values are kept and
	// read after the pass in key order. The loop body stays small enough
	// to be inlined into the map's iterator: a call and a switch per
	// attribute were most of the cost of decoding.
	var seen uint64
	var others [referenceNumOtherKeys]pcommon.Value
	for k, v := range attrs.All() {
		// keyIndex, by hand (it is past the budget of a call the compiler
		// inlines), and matches without a loop or a branch: five words, the
		// last ones the same for a short key.
		if len(k) < minKeyLen {
			continue
		}
		e := &keyTable[keySlot(k)]
		last := len(k) - 8
		if int(e.n) != len(k) || (keyWord(k, 0)^e.words[0])|(keyWord(k, min(8, last))^e.words[1])|
			(keyWord(k, min(16, last))^e.words[2])|(keyWord(k, min(24, last))^e.words[3])|
			(keyWord(k, last)^e.words[4]) != 0 {
			continue
		}
		i := e.key
		bit := uint64(1) << (uint(i) & 63) // i < 64: no shift past the word to check
		if seen&bit != 0 {
			problems |= ProblemDuplicateKey
			continue
		}
		seen |= bit
		if referenceStringKeys&bit == 0 {
			others[referenceOtherSlot[i]] = v
			continue
		}
		s := v.Str() // str, by hand: the call was a fifth of the cost
		if s == "" {
			s = strOther(v)
		}
		*(*string)(unsafe.Add(unsafe.Pointer(dst), stringOffsets[i])) = s
	}
	if seen&^referenceStringKeys == 0 {
		// The namespace and cluster keys also sit on every log from a pod
		// or node; alone they do not make a record an Event.
		return problems, seen&^(1<<keyNamespace|1<<keyClusterName|1<<keyClusterUID) != 0
	}
	found = seen&^(1<<keyNamespace|1<<keyClusterName|1<<keyClusterUID|1<<keyNodeName) != 0
	if seen&(1<<keyNodeName) != 0 && seen&(1<<keySourceHost) == 0 {
		// the node name is the source host only if the map has no k8s.event.source.host
		dst.SourceHost = str(others[referenceOtherSlot[keyNodeName]])
	}
	for rest := seen &^ referenceStringKeys &^ (1 << keyNodeName); rest != 0; rest &= rest - 1 {
		i := contractKey(bits.TrailingZeros64(rest))
		problems |= decodeKey(i, others[referenceOtherSlot[i]], dst, opts)
	}
	return problems, found
}

// referenceStringKeys, referenceNumOtherKeys and referenceOtherSlot are the
// tables the reference decoder read.
const referenceStringKeys = 1<<keyEventName | 1<<keyEventUID | 1<<keyEventNamespace | 1<<keyReason | 1<<keyAction |
	1<<keyNamespace | 1<<keyObjectKind | 1<<keyObjectName | 1<<keyObjectUID | 1<<keyObjectAPIVersion |
	1<<keyObjectFieldPath | 1<<keyObjectResourceVer | 1<<keySourceComponent | 1<<keySourceHost |
	1<<keyReportingController | 1<<keyReportingInstance | 1<<keyRelatedKind | 1<<keyRelatedName |
	1<<keyRelatedNamespace | 1<<keyRelatedUID | 1<<keyRelatedAPIVersion | 1<<keyRelatedFieldPath |
	1<<keyRelatedResourceVer | 1<<keySeriesState | 1<<keyClusterName | 1<<keyClusterUID

const referenceNumOtherKeys = numContractKeys - 26

var referenceOtherSlot = func() (s [numContractKeys]int8) {
	n := 0
	for i := range numContractKeys {
		s[i] = -1
		if referenceStringKeys&(uint64(1)<<i) == 0 {
			s[i] = int8(n)
			n++
		}
	}
	return s
}()

// referenceDecodeRecord is DecodeRecord as it was: the reference decoder
// of the attributes, the body read by str after a type switch, then the
// severity and the timestamp as DecodeRecord still reads them (it is given
// a record that holds only those: its attributes decode to nothing).
func referenceDecodeRecord(lr plog.LogRecord, dst *Event, opts DecodeOptions) (problems Problem, found bool) {
	problems, found = referenceDecodeAttributes(lr.Attributes(), dst, opts)
	if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
		dst.Note = str(body)
	}
	bare := plog.NewLogRecord()
	bare.SetSeverityText(lr.SeverityText())
	bare.SetSeverityNumber(lr.SeverityNumber())
	bare.SetTimestamp(lr.Timestamp())
	p, _ := DecodeRecord(bare, dst, opts)
	return problems | p, found
}

// randomDecodeKeys are what the maps of TestDecodeAttributesIsTheReference
// hold: every contract key, each also with one byte changed (at every
// position), cut and extended by a byte, and keys of no contract length.
func randomDecodeKeys() []string {
	keys := []string{"", "k8s", "k8s.pod.name", "service.name", "log.iostream", "K8S.EVENT.REASON"}
	for _, k := range ContractKeys {
		keys = append(keys, k, k[:len(k)-1], k+".", "x"+k[1:])
		for at := range len(k) {
			b := []byte(k)
			b[at] ^= 0x20
			keys = append(keys, string(b))
		}
	}
	return keys
}

// randomDecodeValue sets v to a value of any type, strings among them
// that parse as times and integers and some that almost do.
func randomDecodeValue(rng *rand.Rand, v pcommon.Value) {
	strs := []string{"", "web-0", "Pod", "v1", "kube-system", "12", "-3", "9223372036854775808", "1.5",
		"2026-03-01T12:00:00Z", "2026-03-01T12:00:00.123456789+02:00", "2026-03-01 12:00:00 +0000 UTC",
		"2026-03-01 12:00:00.5 +0100 +0100", "0001-01-01T00:00:00Z", "3000-01-01T00:00:00Z", "2026-13-01T00:00:00Z"}
	switch rng.IntN(9) {
	case 0, 1, 2, 3:
		v.SetStr(strs[rng.IntN(len(strs))])
	case 4:
		v.SetInt(rng.Int64N(2000) - 1000)
	case 5:
		v.SetDouble([]float64{1.5, -2, math.NaN(), math.Inf(1), 1e19, -1e19}[rng.IntN(6)])
	case 6:
		v.SetBool(rng.IntN(2) == 0)
	case 7:
		v.SetEmptyBytes().FromRaw([]byte("raw"))
	default:
		if rng.IntN(2) == 0 {
			v.SetEmptyMap().PutStr("k", "v")
		} // else empty
	}
}

// TestDecodeAttributesIsTheReference: on 20,000 random resources and
// records (contract keys repeated, keys a byte off, values of every type;
// bodies of every type, severities, timestamps), decoded one after the
// other into one Event as the processor does, with and without SkipTimes,
// DecodeAttributes and DecodeRecord give the reference decoders' Event,
// problems and found.
func TestDecodeAttributesIsTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 14))
	keys := randomDecodeKeys()
	randomMap := func() pcommon.Map {
		m := pcommon.NewMap()
		for range rng.IntN(20) {
			k := keys[rng.IntN(len(keys))]
			if rng.IntN(2) == 0 {
				k = ContractKeys[rng.IntN(len(ContractKeys))]
			}
			randomDecodeValue(rng, m.PutEmpty(k)) // PutEmpty appends: a key may repeat
		}
		return m
	}
	for n := range 20000 {
		res, rec := randomMap(), randomMap()
		opts := DecodeOptions{SkipTimes: rng.IntN(2) == 0}
		var got, want Event
		if rng.IntN(4) == 0 { // what an earlier record left (the decoder overwrites only what it finds)
			got.Reason, got.SourceHost, got.Count = "left", "host", 7
			want = got
		}
		gp, gf := DecodeAttributes(res, &got, opts)
		wp, wf := referenceDecodeAttributes(res, &want, opts)
		require.Equal(t, wp, gp, "case %d resource problems: %v", n, res.AsRaw())
		require.Equal(t, wf, gf, "case %d resource found: %v", n, res.AsRaw())
		lr := randomDecodeRecord(rng)
		rec.MoveTo(lr.Attributes())
		gp, gf = DecodeRecord(lr, &got, opts)
		wp, wf = referenceDecodeRecord(lr, &want, opts)
		require.Equal(t, wp, gp, "case %d record problems: %v", n, lr.Attributes().AsRaw())
		require.Equal(t, wf, gf, "case %d record found: %v", n, lr.Attributes().AsRaw())
		require.Equal(t, want, got, "case %d: %v then %v, body %v", n, res.AsRaw(), lr.Attributes().AsRaw(), lr.Body().AsRaw())
	}
}

// randomDecodeRecord is a log record with a body of any type, a severity
// and a timestamp, or none of them.
func randomDecodeRecord(rng *rand.Rand) plog.LogRecord {
	lr := plog.NewLogRecord()
	switch rng.IntN(4) {
	case 0:
		lr.SetTimestamp(pcommon.Timestamp(rng.Uint64()))
	case 1, 2:
		lr.SetTimestamp(pcommon.Timestamp(1_772_000_000_000_000_000 + rng.Int64N(1e12)))
	}
	lr.SetSeverityText([]string{"", "Warning", "Normal", "warn", "Error"}[rng.IntN(5)])
	lr.SetSeverityNumber(plog.SeverityNumber(rng.IntN(26)))
	randomDecodeValue(rng, lr.Body())
	return lr
}
