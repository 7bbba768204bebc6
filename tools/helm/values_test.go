package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// TestHelmValuesDocumented: every row of the README's values table names a
// value of values.yaml, with its default as values.yaml has it, a comment
// there and a property in values.schema.json; every value of values.yaml
// is in a row (itself, or a map around it such as resources).
func TestHelmValuesDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, chartDir, "README.md"))
	require.NoError(t, err)
	rows := map[string]string{} // value -> its default, as written
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([^`]*)` \\|").FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = m[2]
	}
	require.NotEmpty(t, rows, "the README's values table")

	b, err := os.ReadFile(filepath.Join(root, chartDir, "values.yaml"))
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(b, &doc))
	entries := map[string][2]*yaml.Node{} // value -> its key and value nodes
	var leaves []string
	var walk func(prefix string, m *yaml.Node)
	walk = func(prefix string, m *yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			path := prefix + k.Value
			entries[path] = [2]*yaml.Node{k, v}
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				walk(path+".", v)
			} else {
				leaves = append(leaves, path)
			}
		}
	}
	walk("", doc.Content[0])

	raw, err := os.ReadFile(filepath.Join(root, chartDir, "values.schema.json"))
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(raw, &schema))
	for path, def := range rows {
		node := schema
		for _, k := range strings.Split(path, ".") {
			props, _ := node["properties"].(map[string]any)
			node, _ = props[k].(map[string]any)
		}
		assert.NotNil(t, node, "README row %s has no property in values.schema.json", path)
		e, ok := entries[path]
		if !assert.True(t, ok, "README row %s is no value of values.yaml", path) {
			continue
		}
		assert.NotEmpty(t, e[0].HeadComment+e[0].LineComment+e[1].LineComment, "%s has no comment in values.yaml", path)
		var want, got any
		require.NoError(t, yaml.Unmarshal([]byte(def), &want), path)
		require.NoError(t, e[1].Decode(&got), path)
		assert.Equal(t, got, want, "README's default of %s", path)
	}
	for _, leaf := range leaves {
		covered := false
		for path := range rows {
			covered = covered || leaf == path || strings.HasPrefix(leaf, path+".")
		}
		assert.True(t, covered, "%s of values.yaml has no row in the README's values table", leaf)
	}
}
