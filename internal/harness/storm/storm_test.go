package storm

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScenariosAreDeterministicAndOrdered(t *testing.T) {
	for name, gen := range Recorded {
		a, b := gen(), gen()
		require.Equal(t, a, b, name)
		require.NotEmpty(t, a, name)
		for i := 1; i < len(a); i++ {
			require.False(t, a[i].Time.Before(a[i-1].Time), "%s: line %d out of order", name, i+1)
		}
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	occs := CronJob()[:50]
	for _, file := range []string{"s.jsonl", "s.jsonl.gz"} {
		path := filepath.Join(t.TempDir(), file)
		require.NoError(t, WriteFile(path, occs))
		got, err := ReadFile(path)
		require.NoError(t, err)
		require.Len(t, got, len(occs))
		for i := range occs {
			assert.True(t, occs[i].Time.Equal(got[i].Time))
			got[i].Time = occs[i].Time
		}
		assert.Equal(t, occs, got)
	}
}

func TestReadReportsTheBadLine(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, ReplicaSet()[:2]))
	buf.WriteString("{not json\n")
	_, err := Read(strings.NewReader(buf.String()))
	require.ErrorContains(t, err, "line 3")
}

func TestCommittedStreamsAreTheScenarios(t *testing.T) {
	for name, gen := range Recorded {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "streams", name+".jsonl*"))
		require.Len(t, paths, 1, "%s: run make streams", name)
		got, err := ReadFile(paths[0])
		require.NoError(t, err)
		want := gen()
		require.Len(t, got, len(want), name)
		for i := range want {
			require.True(t, want[i].Time.Equal(got[i].Time), "%s line %d", name, i+1)
			got[i].Time = want[i].Time
		}
		require.Equal(t, want, got, name)
	}
}
