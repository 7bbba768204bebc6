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

// TestToolModulesRequireTheMainModulesVersions: tools/kube (the API server
// and etcd the tests run) and tools/helm (the chart's renderer and tests)
// require every module they share with this module at this module's
// version, which is the distribution's (docs/versions.md). One package at
// another version gives every package above it another build key, and a
// cold make test then compiles client-go, grpc and the rest once more:
// tools/kube's build shares its packages with the distribution's, and
// tools/helm's race-built tests with this module's.
func TestToolModulesRequireTheMainModulesVersions(t *testing.T) {
	root := repoRoot(t)
	main := requiredVersions(readFile(t, root+"/go.mod"))
	for _, dir := range []string{"tools/kube", "tools/helm"} {
		shared := 0
		for mod, v := range requiredVersions(readFile(t, root+"/"+dir+"/go.mod")) {
			if mv, ok := main[mod]; ok {
				shared++
				if mv != v {
					t.Errorf("%s: %s requires %s, go.mod %s", mod, dir, v, mv)
				}
			}
		}
		if shared < 50 {
			t.Errorf("%s: only %d modules in both go.mod files: the check would pass vacuously", dir, shared)
		}
	}
}

// requiredVersions reads a go.mod's requirements, a replacement by another
// version of the same module taking the required one's place.
func requiredVersions(gomod string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:require\s+)?(\S+) (v\S+)(?: // indirect)?$`).FindAllStringSubmatch(gomod, -1) {
		out[m[1]] = m[2]
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:replace\s+)?(\S+) => (\S+) (v\S+)$`).FindAllStringSubmatch(gomod, -1) {
		if m[1] == m[2] {
			out[m[1]] = m[3]
		}
	}
	return out
}
