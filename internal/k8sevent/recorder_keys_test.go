package k8sevent_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// stringConsts reads the string constants declared in the non-test Go
// files matching glob, by name.
func stringConsts(t *testing.T, glob string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(glob)
	require.NoError(t, err)
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err, path)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						out[name.Name] = v
					}
				}
			}
		}
	}
	return out
}

// TestRecorderKeysAreContractKeys: the recorder module (recorder/) keeps
// its own copy of the attribute keys it writes, because an app importing
// it must not pull this module. Each of its Attr constants must be a
// contract key the codec reads, under the same name as here, so that the
// two cannot drift apart; its annotation attributes must not fall under a
// contract key.
func TestRecorderKeysAreContractKeys(t *testing.T) {
	ours := stringConsts(t, "keys.go")
	theirs := stringConsts(t, filepath.Join("..", "..", "recorder", "*.go"))
	n := 0
	for name, v := range theirs {
		if !strings.HasPrefix(name, "Attr") {
			continue
		}
		n++
		require.Contains(t, k8sevent.ContractKeys[:], v, "recorder.%s = %q is not a contract key", name, v)
		require.Equal(t, ours[name], v, "recorder.%s differs from k8sevent.%s", name, name)
	}
	require.GreaterOrEqual(t, n, 20, "recorder's key constants found (regarding, related, reason, action, reporter, source)")

	prefix := theirs["AnnotationPrefix"]
	require.NotEmpty(t, prefix)
	require.False(t, slices.ContainsFunc(k8sevent.ContractKeys[:], func(k string) bool { return strings.HasPrefix(k, prefix) }),
		"annotation attributes %s* must not shadow a contract key", prefix)
	require.Equal(t, "k8s.event", theirs["EventName"], "the EventName the receiver and processor are to use too")
}

// TestRecorderRequestDecodes: recorder/testdata/records.otlp.pb is the
// OTLP request the recorder module sends for a tools/record
// AnnotatedEventf and a tools/events Eventf (its TestGoldenRequestIsCurrent
// keeps the file current). The codec decodes both records with no
// problem, into the Events client-go's recorders would have made of the
// same calls (the values of the recorder's own tests against client-go).
func TestRecorderRequestDecodes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "recorder", "testdata", "records.otlp.pb"))
	require.NoError(t, err)
	req := plogotlp.NewExportRequest()
	require.NoError(t, req.UnmarshalProto(raw))
	ld := req.Logs()
	require.Equal(t, 2, ld.LogRecordCount())
	rl := ld.ResourceLogs().At(0)
	recs := rl.ScopeLogs().At(0).LogRecords()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	pod := k8sevent.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1", UID: "uid-web-1", APIVersion: "v1", ResourceVersion: "42"}
	want := []k8sevent.Event{{
		Type: k8sevent.TypeWarning, Reason: "BackOff", Note: "Back-off 3", Regarding: pod,
		ReportingController: "example.com/golden", ReportingInstance: "golden-0", SourceComponent: "example.com/golden", Time: at,
	}, {
		Type: k8sevent.TypeNormal, Reason: "Scheduled", Action: "Binding", Note: "assigned to node-1", Regarding: pod,
		Related:             k8sevent.ObjectRef{Kind: "Node", Name: "node-1", UID: "uid-node-1", APIVersion: "v1"},
		ReportingController: "example.com/golden", ReportingInstance: "golden-0", Time: at.Add(time.Nanosecond), // a call at the same instant: a nanosecond later
	}}
	for i := range want {
		lr := recs.At(i)
		require.Equal(t, theirsEventName(t), lr.EventName(), "record %d", i)
		ev, problems, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
		require.True(t, found, "record %d is an Event", i)
		require.Zero(t, problems, "record %d: %v", i, problems)
		require.Equal(t, want[i], ev, "record %d", i)
	}
	ann, ok := recs.At(0).Attributes().Get("k8s.event.annotation.example.com/run")
	require.True(t, ok, "AnnotatedEventf's annotation, beside the contract keys")
	require.Equal(t, "7", ann.Str())
}

func theirsEventName(t *testing.T) string {
	t.Helper()
	return stringConsts(t, filepath.Join("..", "..", "recorder", "*.go"))["EventName"]
}
