package harness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPurePackagesStartNoGoroutine: make test runs the packages of the
// Makefile's PURE_PKGS without the race detector, which can only find a
// race between goroutines. That holds while neither their code nor their
// tests start one: a go statement or a t.Parallel call in any of their
// files fails here, and the package then belongs under the race detector
// (out of PURE_PKGS, it runs in test-race-rest).
func TestPurePackagesStartNoGoroutine(t *testing.T) {
	root := repoRoot(t)
	m := regexp.MustCompile(`(?m)^PURE_PKGS :=(.*)$`).FindStringSubmatch(readFile(t, root+"/Makefile"))
	if m == nil {
		t.Fatal("the Makefile has no PURE_PKGS line")
	}
	pkgs := strings.Fields(m[1])
	if len(pkgs) == 0 {
		t.Fatal("PURE_PKGS is empty: the check would pass vacuously")
	}
	for _, pkg := range pkgs {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no Go files (%v)", pkg, err)
			continue
		}
		tests := 0
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				tests++
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: a go statement: %s runs under make test's race detector no more; take it out of PURE_PKGS",
						fset.Position(g.Pos()), pkg)
				}
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" {
					t.Errorf("%s: a parallel test: %s runs under make test's race detector no more; take it out of PURE_PKGS",
						fset.Position(sel.Pos()), pkg)
				}
				return true
			})
		}
		if tests == 0 {
			t.Errorf("%s has no tests: nothing to run without the race detector", pkg)
		}
	}
}
