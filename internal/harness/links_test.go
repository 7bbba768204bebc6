package harness

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

// mdLink is a Markdown inline link or image: [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinksResolveInTheRepository reads every Markdown file of the
// repository and checks that each relative link names a file or directory
// inside it, and that a link to a heading of a Markdown file names one it
// has: what a user who clones the repository can follow.
func TestDocLinksResolveInTheRepository(t *testing.T) {
	root, err := childproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var files, links int
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		files++
		links += checkLinks(t, root, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 || links < 20 {
		t.Fatalf("read %d Markdown files and %d relative links: the check would pass vacuously", files, links)
	}
	t.Logf("%d relative links in %d Markdown files", links, files)
}

// skipDir leaves out what is not the repository's own text: hidden
// directories, binaries and ocb's output.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "bin" || name == "otelcol-k8sevents" || name == "node_modules"
}

// checkLinks checks the relative links of one Markdown file and returns how
// many it checked.
func checkLinks(t *testing.T, root, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(root, path)
	n := 0
	for _, m := range mdLink.FindAllStringSubmatch(stripCode(string(b)), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		n++
		file, anchor, _ := strings.Cut(target, "#")
		dest := path
		if file != "" {
			dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
		}
		if r, err := filepath.Rel(root, dest); err != nil || strings.HasPrefix(r, "..") {
			t.Errorf("%s: link %q leaves the repository", rel, target)
			continue
		}
		if _, err := os.Stat(dest); err != nil {
			t.Errorf("%s: link %q: %v", rel, target, err)
			continue
		}
		if anchor != "" && strings.HasSuffix(dest, ".md") && !hasHeading(t, dest, anchor) {
			t.Errorf("%s: link %q: no heading #%s in %s", rel, target, anchor, filepath.Base(dest))
		}
	}
	return n
}

// inlineCode is a code span, where a "link" is text, not a link.
var inlineCode = regexp.MustCompile("`[^`]*`")

// stripCode removes fenced code blocks and code spans.
func stripCode(s string) string {
	return inlineCode.ReplaceAllString(stripCodeFences(s), "")
}

// hasHeading says whether the Markdown file has a heading whose GitHub
// anchor is anchor: lower case, spaces to hyphens, punctuation other than
// hyphens and underscores dropped.
func hasHeading(t *testing.T, path, anchor string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(stripCodeFences(string(b)), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		if slug(strings.TrimLeft(line, "# ")) == anchor {
			return true
		}
	}
	return false
}

func stripCodeFences(s string) string {
	var out []string
	inFence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
