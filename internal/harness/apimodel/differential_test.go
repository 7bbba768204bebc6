package apimodel

// The differential test: each case's requests go, byte for byte, to the
// model and to a real kube-apiserver (internal/harness/kubetest), and their
// answers must agree once what a server makes up (uids, resourceVersions,
// timestamps, generated names, tokens) is replaced by what it stands for.
// The real server's answers are the truth: a difference is a model bug.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// The users every case may act as.
const (
	asAdmin     = "admin"     // system:masters
	asWriter    = "writer"    // events, leases, namespaces, reviews: cluster-wide
	asLimited   = "limited"   // create and get core/v1 events in limitedNamespace only
	asNobody    = "nobody"    // no rule
	asAnonymous = "anonymous" // no token
	asBadToken  = "badtoken"  // a token no one issued
)

const limitedNamespace = "am-limited"

// side is one server as the test talks to it.
type side struct {
	name    string
	base    string
	clients map[string]*http.Client // by user
	tokens  map[string]string       // by token name (see tokenNames)
	users   map[string]string       // user name by user
	compact func(t *testing.T)
	// clientFor is a client with a bearer token of the test's own.
	clientFor func(t *testing.T, token string) *http.Client
	// newCase prepares the server for a case: its namespaces.
	newCase func(t *testing.T, namespaces ...string)
}

// httpClient is a client for cfg without client-go's retries and limits.
func httpClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	return c
}

// result is one answer: the HTTP status and the body (JSON decoded; text
// as a string), or for a watch the frames read.
type result struct {
	Code   int
	Body   any
	Frames []any `json:",omitempty"`
}

// do sends one request.
func (sd *side) do(t *testing.T, as, method, path, contentType string, body []byte) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, sd.base+path, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := sd.client(t, as).Do(req)
	require.NoError(t, err, "%s %s %s", sd.name, method, path)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return result{Code: resp.StatusCode, Body: decodeBody(b)}
}

// watch opens a watch, runs during (the writes it should see), and reads
// frames until want of them came, the stream ended, or wait passed.
func (sd *side) watch(t *testing.T, as, path string, want int, wait time.Duration, during func()) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sd.base+path, nil)
	require.NoError(t, err)
	resp, err := sd.client(t, as).Do(req)
	require.NoError(t, err, "%s watch %s", sd.name, path)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return result{Code: resp.StatusCode, Body: decodeBody(b)}
	}
	frames := make(chan any)
	go func() {
		defer close(frames)
		dec := json.NewDecoder(resp.Body)
		for {
			var f any
			if dec.Decode(&f) != nil {
				return
			}
			select {
			case frames <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	if during != nil {
		during()
	}
	r := result{Code: resp.StatusCode}
	for len(r.Frames) < want {
		f, ok := <-frames
		if !ok {
			break
		}
		r.Frames = append(r.Frames, f)
	}
	cancel()
	for range frames {
	}
	return r
}

// client is the client of a user, or of a token (a user not known).
func (sd *side) client(t *testing.T, as string) *http.Client {
	if c, ok := sd.clients[as]; ok {
		return c
	}
	return sd.clientFor(t, as)
}

func decodeBody(b []byte) any {
	var v any
	if json.Unmarshal(b, &v) == nil {
		return v
	}
	return strings.TrimSpace(string(b))
}

// realSide is a real kube-apiserver with the test's users.
func realSide(t *testing.T, name string, srv *kubetest.Server) *side {
	t.Helper()
	sd := &side{name: name, base: srv.URL(), clients: map[string]*http.Client{}, tokens: map[string]string{}, users: map[string]string{}}
	cs := srv.Clientset()
	ctx := context.Background()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: limitedNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tokens := map[string]string{asAdmin: srv.AdminToken(), asAnonymous: "", asBadToken: "not-a-token"}
	sd.users[asAdmin] = kubetest.AdminUser
	for _, as := range []string{asWriter, asLimited, asNobody} {
		sd.users[as], tokens[as] = srv.NewUser(t, "apimodel-"+as)
	}
	grant(t, srv, sd.users[asWriter], "", writerRules)
	grant(t, srv, sd.users[asLimited], limitedNamespace, limitedRules)
	for as, token := range tokens {
		sd.clients[as] = httpClient(t, srv.RESTConfigFor(token))
	}
	sd.tokens["writer"] = tokens[asWriter]
	sd.tokens["admin"] = tokens[asAdmin]
	sd.tokens["collector"] = srv.ServiceAccountToken(t, "kubetest-users", "apimodel-writer", time.Hour, "collector")
	sd.tokens["expired"] = srv.ExpiredToken(t, tokens[asWriter])
	sd.compact = func(t *testing.T) { compactEtcd(t, srv) }
	sd.clientFor = func(t *testing.T, token string) *http.Client { return httpClient(t, srv.RESTConfigFor(token)) }
	sd.newCase = func(t *testing.T, namespaces ...string) {
		for _, ns := range namespaces {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	return sd
}

// The RBAC rules of the users, as rbacv1 rules (real) and Allow calls (model).
var (
	writerRules = []rbacv1.PolicyRule{
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"*"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}},
	}
	limitedRules = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "get"}},
	}
)

// grant binds rules to user (a ClusterRole and binding when namespace is
// empty, else a Role and RoleBinding there) and waits until the
// authorizer honours them.
func grant(t *testing.T, srv *kubetest.Server, user, namespace string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	rbac := srv.Clientset().RbacV1()
	name := "apimodel-" + strings.ReplaceAll(user, ":", "-")
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	var err error
	if namespace == "" {
		_, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		if err == nil {
			_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
		}
	} else {
		_, err = rbac.Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		if err == nil {
			_, err = rbac.RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
		}
	}
	require.NoError(t, err)
	body := fmt.Sprintf(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":%q,"resourceAttributes":{"namespace":%q,"verb":%q,"group":%q,"resource":%q}}}`,
		user, namespace, rules[0].Verbs[0], rules[0].APIGroups[0], rules[0].Resources[0])
	deadline := time.Now().Add(time.Minute)
	for {
		raw, err := srv.Clientset().AuthorizationV1().RESTClient().Post().Resource("subjectaccessreviews").Body([]byte(body)).DoRaw(ctx)
		if err == nil && strings.Contains(string(raw), `"allowed":true`) {
			return
		}
		require.True(t, time.Now().Before(deadline), "rules of %s not honoured after a minute: %s %v", user, raw, err)
		time.Sleep(20 * time.Millisecond)
	}
}

// compactEtcd compacts the server's etcd as its own compactor would: a
// write, then a compaction at its revision.
func compactEtcd(t *testing.T, srv *kubetest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := srv.Clientset().CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "apimodel-compact-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	body := fmt.Sprintf(`{"revision":%q,"physical":true}`, cm.ResourceVersion)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.EtcdEndpoint()+"/v3/kv/compaction", strings.NewReader(body))
	require.NoError(t, err)
	req.Close = true // a leased server's etcd outlives the test: keep no connection
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "etcd compaction: %s", b)
}

// modelSide is a fresh model with the same users and rules as real.
func modelSide(t *testing.T, real *side, opts Options) *side {
	t.Helper()
	m := New(opts)
	sd := &side{name: "model", base: Host, clients: map[string]*http.Client{}, tokens: map[string]string{}, users: real.users}
	m.CreateNamespace(limitedNamespace)
	m.CreateNamespace("kubetest-users")
	m.AddUser("admin-token", real.users[asAdmin], "system:masters")
	tokens := map[string]string{asAdmin: "admin-token", asAnonymous: "", asBadToken: "not-a-token"}
	for _, as := range []string{asWriter, asLimited, asNobody} {
		tokens[as] = as + "-token"
		m.AddServiceAccountToken(tokens[as], ServiceAccount{Namespace: "kubetest-users", Name: "apimodel-" + as, UID: types.UID("uid-of-" + as)}, nil, time.Time{})
	}
	for _, r := range writerRules {
		for _, g := range r.APIGroups {
			m.Allow(real.users[asWriter], r.Verbs, g, r.Resources[0], "")
		}
	}
	m.Allow(real.users[asLimited], limitedRules[0].Verbs, "", "events", limitedNamespace)
	for as, token := range tokens {
		sd.clients[as] = httpClient(t, m.RESTConfig(token))
	}
	sd.tokens["writer"], sd.tokens["admin"] = tokens[asWriter], tokens[asAdmin]
	sd.tokens["collector"] = "collector-token"
	m.AddServiceAccountToken("collector-token", ServiceAccount{Namespace: "kubetest-users", Name: "apimodel-writer", UID: "uid-of-writer"}, []string{"collector"}, time.Time{})
	sd.tokens["expired"] = "expired-token"
	m.AddServiceAccountToken("expired-token", ServiceAccount{Namespace: "kubetest-users", Name: "apimodel-writer", UID: "uid-of-writer"}, nil, time.Now().Add(-time.Minute))
	sd.compact = func(*testing.T) { m.Compact() }
	sd.clientFor = func(t *testing.T, token string) *http.Client { return httpClient(t, m.RESTConfig(token)) }
	sd.newCase = func(_ *testing.T, namespaces ...string) {
		for _, ns := range namespaces {
			m.CreateNamespace(ns)
		}
	}
	return sd
}
