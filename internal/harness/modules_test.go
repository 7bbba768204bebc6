package harness

import (
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
)

// TestEveryModuleIsCoveredByMakeTest: each Go module of the repository
// other than the root one (whose ./... make test runs) is either tested by
// make test (a `cd <dir> && $(GO) test` line in its recipe), or holds no test at all and
// is still exercised: named in the Makefile (tools/kube: make apiserver)
// or run by a go:generate line (tools/mdatagen: lint's check-generated.sh
// runs go generate). A module added with tests and no line in make test
// fails here.
func TestEveryModuleIsCoveredByMakeTest(t *testing.T) {
	root := repoRoot(t)
	files := gitLines(t, root, "ls-files", "*go.mod")
	makefile := readFile(t, root+"/Makefile")
	recipe := testRecipe(t, makefile)
	generate := strings.Join(gitLines(t, root, "grep", "-h", "go:generate", "--", "*.go"), "\n")
	checked := 0
	for _, f := range files {
		dir := path.Dir(f)
		if dir == "." {
			continue
		}
		checked++
		tests := gitLines(t, root, "ls-files", dir+"/*_test.go")
		switch {
		case len(tests) > 0:
			if !regexp.MustCompile(`(?m)^\tcd ` + regexp.QuoteMeta(dir) + ` && (\S+=\S+ )*\$\(GO\) test `).MatchString(recipe) {
				t.Errorf("module %s has tests (%s) that make test does not run: add a `cd %s && $(GO) test` line", dir, tests[0], dir)
			}
		case !strings.Contains(makefile, dir+"/") && !strings.Contains(generate, dir+"/go.mod"):
			t.Errorf("module %s is neither tested, named in the Makefile, nor used by a go:generate line", dir)
		}
	}
	if checked < 4 {
		t.Fatalf("found only %d modules besides the root: the check would pass vacuously", checked)
	}
}

// testRecipe is the recipe of the Makefile's test target.
func testRecipe(t *testing.T, makefile string) string {
	t.Helper()
	_, rest, ok := strings.Cut(makefile, "\ntest:")
	if !ok {
		t.Fatal("the Makefile has no test target")
	}
	recipe, _, _ := strings.Cut(rest, "\n\n")
	return recipe
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func gitLines(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil && len(out) == 0 {
		return nil // git grep finding nothing exits 1
	}
	return strings.Fields(string(out))
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
