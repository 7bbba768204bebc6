package k8sevent_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
