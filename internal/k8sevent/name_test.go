package k8sevent

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"k8s.io/apimachinery/pkg/util/validation"
)

// keyIndex finds every contract key at its place and nothing else, also
// strings that fall in a contract key's slot.
func TestKeyIndex(t *testing.T) {
	for i, k := range ContractKeys {
		require.Equal(t, i, keyIndex(k), k)
		require.Equal(t, -1, keyIndex(k+"x"), k+"x")
		require.Equal(t, -1, keyIndex("x"+k[1:]), "x"+k[1:])
	}
	for _, k := range []string{"", "k", "k8s", "k8s.", "service.name", "k8s.pod.name"} {
		require.Equal(t, -1, keyIndex(k), k)
	}
}

// keyIndex compares a key a word at a time: a key with any one byte
// changed, at any place, is no contract key, nor is one cut or extended
// by a byte (each word of every key, the overlapping last one included).
func TestKeyIndexComparesEveryByte(t *testing.T) {
	for _, k := range ContractKeys {
		for at := range len(k) {
			for _, c := range []byte{k[at] ^ 1, k[at] ^ 0x80, 0, '.'} {
				if c == k[at] {
					continue
				}
				b := []byte(k)
				b[at] = c
				requireNoKey(t, string(b))
			}
		}
		requireNoKey(t, k[:len(k)-1])
		requireNoKey(t, k[1:])
		requireNoKey(t, k+"x")
	}
}

// requireNoKey checks that k is no contract key for keyIndex and for
// DecodeAttributes, which compares keys in its own loop.
func requireNoKey(t *testing.T, k string) {
	t.Helper()
	require.Equal(t, -1, keyIndex(k), "%q", k)
	m := pcommon.NewMap()
	m.PutStr(k, "7")
	var ev Event
	problems, found := DecodeAttributes(m, &ev, DecodeOptions{})
	require.False(t, found, "%q", k)
	require.Zero(t, problems, "%q", k)
	require.Equal(t, Event{}, ev, "%q", k)
}

// Sanitize checks reporting controllers with apimachinery's rules that do
// not allocate (BenchmarkBudget holds the allocations per record): the
// check must agree with IsQualifiedName on every string.
func TestIsQualifiedNameAgreesWithApimachinery(t *testing.T) {
	cases := []string{"", "a", "A", "kubelet", "default-scheduler", "k8s.io/kubelet", "example.com/My_Name.1",
		"/a", "a/", "a/b/c", "A.com/b", "-a", "a-", "_a", "a_", ".a", "a.", "a..b", "é", "a/é",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 253) + "/a", strings.Repeat("a", 254) + "/a"}
	cases = append(cases, randomStrings(3, "aZ09.-_/.-A_é")...)
	for _, s := range cases {
		want := len(validation.IsQualifiedName(s)) == 0
		require.Equal(t, want, isQualifiedName(s), "%q", s)
	}
}

// randomStrings is 20,000 strings of up to 11 bytes of alphabet (bytes, so
// a multi-byte rune may be cut), the same for a seed on every run.
func randomStrings(seed uint64, alphabet string) []string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]string, 20000)
	for n := range out {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		out[n] = string(b)
	}
	return out
}

// generateNameReference spells GenerateName's names the plainest way: the
// whole name checked, fmt's hex, a byte-wise FNV-1a (the values persisted
// names carry).
func generateNameReference(regardingName string, first time.Time, key string) string {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	b := append([]byte(regardingName), '.')
	b = strconv.AppendUint(b, uint64(first.UnixNano()), 16)
	b = fmt.Appendf(b, "%08x", h)
	if len(validation.IsDNS1123Subdomain(string(b))) == 0 {
		return string(b)
	}
	return fmt.Sprintf("event.%016x%08x", uint64(first.UnixNano()), h)
}

// Names are stable (a restored snapshot's series and a previous
// version's objects keep theirs) and valid: over random regarding names
// (valid and not, around the 253-byte limit), times (zero, negative, the
// ends of int64) and keys (every length around the hash's 4-byte steps),
// GenerateName gives the reference name, and it is a DNS subdomain.
func TestGenerateNameIsUnchangedAndValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	names := append(randomStrings(7, "ab09.-.-A_é"), "", "a", strings.Repeat("a", 220), strings.Repeat("a.", 112)+"a")
	for i, name := range names {
		if i%50 == 0 {
			name = strings.Repeat("x", 200+rng.IntN(60)) // where the suffix crosses 253 bytes
		}
		ns := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 15, 16, rng.Int64(), -rng.Int64()}[rng.IntN(9)]
		first := time.Unix(0, ns)
		key := make([]byte, rng.IntN(40))
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		got := GenerateName(name, first, string(key))
		require.Equal(t, generateNameReference(name, first, string(key)), got, "%q at %d", name, ns)
		inPlace := append([]byte("prefix"), key...) // the key is dst's own bytes
		require.Equal(t, "prefix"+string(key)+got, string(AppendName(inPlace, name, first, inPlace[len("prefix"):])))
		require.Empty(t, validation.IsDNS1123Subdomain(got), got)
	}
}
