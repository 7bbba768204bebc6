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

// testRecipe is what make test runs: the recipes of the test target and
// of the test-* targets it runs side by side.
func testRecipe(t *testing.T, makefile string) string {
	t.Helper()
	var recipes []string
	for _, m := range regexp.MustCompile(`(?m)^test(-[a-z]+)?:.*\n((?:\t.*\n)+)`).FindAllStringSubmatch(makefile, -1) {
		recipes = append(recipes, m[2])
	}
	if len(recipes) == 0 {
		t.Fatal("the Makefile has no test target")
	}
	return strings.Join(recipes, "")
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
