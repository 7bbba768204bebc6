package apimodel

// The differential test's runner: steps, their placeholders, and the
// comparison of both sides' normalized answers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// step is one request of a case (or, with compact, an etcd compaction).
type step struct {
	label               string // names the answer for placeholders of later steps
	as                  string // the user ("" is admin)
	method, path, ctype string
	body                string
	watch               *watchStep
	compact             bool
}

// watchStep makes the step a watch: it reads frames (or until the stream
// ends, or wait passed) after running during.
type watchStep struct {
	frames int
	wait   time.Duration
	during []step
}

// diffCase is a sequence of steps run on both sides in fresh namespaces.
type diffCase struct {
	name  string
	steps []step
	// eventsWatchCache runs the case on a server that caches Events
	// (a default one never does), and the model with EventsWatchCache.
	eventsWatchCache bool
}

// TestDifferential runs every case against the model and a real
// kube-apiserver and compares their answers.
func TestDifferential(t *testing.T) {
	srv := kubetest.Start(t)
	real := realSide(t, "kube-apiserver", srv)
	var realCached *side
	for i, c := range diffCases() {
		t.Run(c.name, func(t *testing.T) {
			sd := real
			if c.eventsWatchCache {
				if realCached == nil {
					realCached = realSide(t, "kube-apiserver caching Events", kubetest.Start(t,
						kubetest.WithAPIServerFlags("--watch-cache-sizes=events#1000,events.events.k8s.io#1000")))
				}
				sd = realCached
			}
			runCase(t, i, c, sd, modelSide(t, sd, Options{EventsWatchCache: c.eventsWatchCache}))
		})
	}
	t.Run("discovery", func(t *testing.T) { compareDiscovery(t, real, modelSide(t, real, Options{})) })
}

// compareDiscovery checks that what the model's discovery lists, the real
// server lists alike (the real one lists much more).
func compareDiscovery(t *testing.T, real, model *side) {
	var realGroups, modelGroups metav1.APIGroupList
	decodeResult(t, real.do(t, asAdmin, http.MethodGet, "/apis", "", nil), &realGroups)
	decodeResult(t, model.do(t, asAdmin, http.MethodGet, "/apis", "", nil), &modelGroups)
	for _, g := range modelGroups.Groups {
		i := slices.IndexFunc(realGroups.Groups, func(r metav1.APIGroup) bool { return r.Name == g.Name })
		require.GreaterOrEqual(t, i, 0, "group %s", g.Name)
		assert.Equal(t, realGroups.Groups[i].PreferredVersion, g.PreferredVersion, "group %s", g.Name)
	}
	for _, sg := range servedGroupVersions {
		path := "/apis/" + sg.gv.String()
		if sg.gv.Group == "" {
			path = "/api/v1"
		}
		var realList, modelList metav1.APIResourceList
		decodeResult(t, real.do(t, asAdmin, http.MethodGet, path, "", nil), &realList)
		decodeResult(t, model.do(t, asAdmin, http.MethodGet, path, "", nil), &modelList)
		require.NotEmpty(t, modelList.APIResources, path)
		for _, r := range modelList.APIResources {
			i := slices.IndexFunc(realList.APIResources, func(x metav1.APIResource) bool { return x.Name == r.Name })
			require.GreaterOrEqual(t, i, 0, "%s %s", path, r.Name)
			want := realList.APIResources[i]
			want.StorageVersionHash, want.Categories = "", nil
			slices.Sort(want.Verbs)
			slices.Sort(r.Verbs)
			assert.Equal(t, want, r, "%s %s", path, r.Name)
		}
	}
	var realVersion, modelVersion version.Info
	decodeResult(t, real.do(t, asAdmin, http.MethodGet, "/version", "", nil), &realVersion)
	decodeResult(t, model.do(t, asAdmin, http.MethodGet, "/version", "", nil), &modelVersion)
	assert.Equal(t, realVersion.Major+"."+realVersion.Minor, modelVersion.Major+"."+modelVersion.Minor)
}

func decodeResult(t *testing.T, r result, into any) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Code, "%v", r.Body)
	b, err := json.Marshal(r.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, into))
}

func runCase(t *testing.T, i int, c diffCase, real, model *side) {
	ns := fmt.Sprintf("am-%d", i)
	vars := map[string]string{"{ns}": ns, "{ns2}": ns + "-b", "{missing}": ns + "-missing"}
	var got [2][]result
	for k, sd := range []*side{real, model} {
		sd.newCase(t, ns, ns+"-b")
		sv := map[string]string{}
		for name, tok := range sd.tokens {
			sv["{token:"+name+"}"] = tok
		}
		for as, user := range sd.users {
			sv["{user:"+as+"}"] = user
		}
		r := &runner{t: t, sd: sd, vars: vars, sideVars: sv, n: newNormalizer(), raw: map[string]any{}}
		got[k] = r.run(c.steps)
	}
	require.Len(t, got[1], len(got[0]))
	for j := range got[0] {
		if d := differences("", copyJSON(got[0][j]), copyJSON(got[1][j])); len(d) > 0 {
			t.Errorf("step %d (%s): %s vs model:\n%s", j, stepName(c.steps, j), real.name, strings.Join(d, "\n"))
		}
	}
	if os.Getenv("APIMODEL_DIFF_VERBOSE") != "" {
		for j := range got[0] {
			t.Logf("step %d (%s): %s", j, stepName(c.steps, j), jsonText(got[0][j]))
		}
	}
}

// runner runs steps on one side, keeping the raw answers its
// placeholders read.
type runner struct {
	t              *testing.T
	sd             *side
	vars, sideVars map[string]string
	n              *normalizer
	raw            map[string]any
}

func (r *runner) expand(s string) string {
	for k, v := range r.vars {
		s = strings.ReplaceAll(s, k, v)
	}
	for k, v := range r.sideVars {
		s = strings.ReplaceAll(s, k, v)
	}
	return placeholder.ReplaceAllStringFunc(s, func(p string) string {
		m := placeholder.FindStringSubmatch(p)
		md, _ := r.raw[m[2]].(map[string]any)["metadata"].(map[string]any)
		require.NotNil(r.t, md, "%s: no answer with metadata labelled %s", r.sd.name, m[2])
		v, _ := md[m[1]].(string)
		return v
	})
}

// run runs steps; the answers come normalized, in the order of the steps
// (a watch's own steps first, then the watch's frames).
func (r *runner) run(steps []step) []result {
	var out []result
	for _, st := range steps {
		as := r.expand(st.as)
		if as == "" {
			as = asAdmin
		}
		switch {
		case st.compact:
			r.sd.compact(r.t)
			out = append(out, result{Code: 0})
		case st.watch != nil:
			var during []result
			res := r.sd.watch(r.t, as, r.expand(st.path), st.watch.frames, st.watch.wait, func() {
				during = r.run(st.watch.during)
			})
			out = append(out, during...)
			res.Frames = r.n.frames(r.t, res.Frames)
			r.n.object(r.t, res.Body, false)
			out = append(out, res)
		default:
			body := []byte(r.expand(st.body))
			if st.ctype == protobufType {
				body = toProtobuf(r.t, body)
			}
			res := r.sd.do(r.t, as, st.method, r.expand(st.path), st.ctype, body)
			if st.label != "" {
				r.raw[st.label] = copyJSON(res.Body)
			}
			obj, _ := res.Body.(map[string]any)
			r.n.object(r.t, res.Body, obj != nil && strings.HasSuffix(fmt.Sprint(obj["kind"]), "List"))
			out = append(out, res)
		}
	}
	return out
}

// placeholder is {field:label}: metadata.field of the answer labelled.
var placeholder = regexp.MustCompile(`\{(resourceVersion|continue|name|uid):([a-z0-9-]+)\}`)

func copyJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// differences lists where a (the real answer) and b (the model's) differ.
func differences(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(am)) {
			out = append(out, differences(path+"."+k, am[k], bm[k])...)
		}
		for _, k := range slices.Sorted(maps.Keys(bm)) {
			if _, ok := am[k]; !ok {
				out = append(out, fmt.Sprintf("  %s: real has none, model %s", path+"."+k, short(bm[k])))
			}
		}
		return out
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		var out []string
		for i := range min(len(as), len(bs)) {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i])...)
		}
		for i := len(bs); i < len(as); i++ {
			out = append(out, fmt.Sprintf("  %s[%d]: real %s, model none", path, i, short(as[i])))
		}
		for i := len(as); i < len(bs); i++ {
			out = append(out, fmt.Sprintf("  %s[%d]: real none, model %s", path, i, short(bs[i])))
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{fmt.Sprintf("  %s: real %s, model %s", path, short(a), short(b))}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

func jsonText(r result) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

// stepName names the j-th answer of steps (watches answer after their own steps).
func stepName(steps []step, j int) string {
	var names []string
	var walk func([]step)
	walk = func(ss []step) {
		for _, s := range ss {
			if s.watch != nil {
				walk(s.watch.during)
			}
			names = append(names, strings.TrimSpace(s.method+" "+s.path+" "+s.label))
		}
	}
	walk(steps)
	if j < len(names) {
		return names[j]
	}
	return "?"
}

const protobufType = "application/vnd.kubernetes.protobuf"

// toProtobuf is a JSON body as client-go's typed clients send it.
func toProtobuf(t *testing.T, body []byte) []byte {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	require.NoError(t, err)
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), protobufType)
	require.True(t, ok)
	var b bytes.Buffer
	require.NoError(t, info.Serializer.Encode(obj, &b))
	return b.Bytes()
}

// Step constructors.

func get(label, as, path string) step {
	return step{label: label, as: as, method: http.MethodGet, path: path}
}
func post(label, as, path, body string) step {
	return step{label: label, as: as, method: http.MethodPost, path: path, ctype: "application/json", body: body}
}
func put(label, as, path, body string) step {
	return step{label: label, as: as, method: http.MethodPut, path: path, ctype: "application/json", body: body}
}
func patch(label, as, path, ctype, body string) step {
	return step{label: label, as: as, method: http.MethodPatch, path: path, ctype: ctype, body: body}
}
func del(label, as, path string) step {
	return step{label: label, as: as, method: http.MethodDelete, path: path}
}
func watchFor(path string, frames int, wait time.Duration, during ...step) step {
	return step{method: "WATCH", path: path, watch: &watchStep{frames: frames, wait: wait, during: during}}
}
