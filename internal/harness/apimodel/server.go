// The Server: its options, its state, and what a test does to it from
// outside the API (users, RBAC rules, namespaces, compaction, readiness)
// and reads of it (Events, Writes).

package apimodel

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// APIAudience is the model's API audience: a service account token is a
// bearer token for the model only when issued for it, and a TokenReview
// that names no audience asks for it (kube-apiserver's default: its
// service account issuer).
const APIAudience = "https://kubernetes.default.svc.cluster.local"

// Host is the base URL of RESTConfig; nothing listens there.
const Host = "http://apimodel.invalid"

// DefaultWatchTimeout ends a watch that asked for no timeoutSeconds, as
// kube-apiserver's --min-request-timeout (1800 s) does; the real server
// picks at random up to twice that, the model exactly this.
const DefaultWatchTimeout = 30 * time.Minute

// BookmarkInterval is how often a watch that allows bookmarks gets one
// from a watch cache (see Options.EventsWatchCache).
const BookmarkInterval = time.Minute

// Options configures a Server.
type Options struct {
	// Now is the clock for creationTimestamp, TTLs, bookmarks; nil:
	// time.Now (virtual inside a synctest bubble). Watch timeouts,
	// bookmarks and expiries wait on the time package's timers, so Now
	// must keep to that package's time.
	Now func() time.Time
	// EventTTL: an Event not written for this long is gone (404 on
	// get/patch, absent from list), as the API server's --event-ttl
	// (default 1h). 0: never.
	EventTTL time.Duration
	// EventsWatchCache models kube-apiserver with a watch cache for Events
	// (--watch-cache-sizes=events#N,events.events.k8s.io#N): a watch that
	// allows bookmarks gets one about once a minute and 2 s before its
	// timeout, at the last Event write's resourceVersion when that is newer
	// than the watch's start. Off, as in a default kube-apiserver, which
	// never caches Events: no bookmarks on Event watches.
	EventsWatchCache bool
	// CompactionInterval compacts the history as kube-apiserver's
	// --etcd-compaction-interval (its default 5m) does: every interval, at
	// the revision that was current an interval before, so a watch or list
	// from a resourceVersion older than 1 to 2 intervals answers 410. 0:
	// only Compact compacts.
	CompactionInterval time.Duration
	// Seed seeds the generated names and uids (0 is a seed too): two
	// servers given the same seed and requests answer the same.
	Seed uint64
}

// Server is an in-memory model of kube-apiserver (see the package doc).
// It starts no goroutine: a watch is served by the goroutine reading its
// body.
type Server struct {
	opts Options

	mu     sync.Mutex // guards what follows; held only for short sections
	st     *store
	tokens map[string]identity // bearer token -> who
	rules  []rule
	ready  bool
	// roleBindingsUnsynced: rules for one namespace allow nothing yet.
	roleBindingsUnsynced bool
	writes               []Write
	// The periodic compaction: the next one, and the revision it compacts at.
	nextCompaction time.Time
	compactAt      int64
	rng            *rand.Rand
	endWatch       chan struct{} // closed (and replaced) by EndWatches
}

// identity is an authenticated user, and for a service account token its
// audiences and expiry.
type identity struct {
	name, uid string
	groups    []string
	extra     map[string][]string
	audiences []string  // nil: any (a static token: audience agnostic)
	expires   time.Time // zero: never
}

// rule is one Allow.
type rule struct {
	user, group, resource, namespace string
	verbs                            []string
}

// Write is one accepted Event write, in order. Verb is create, update,
// patch or delete (as requested), expire (the Event TTL) or
// deletenamespace (DeleteNamespace). Group is the request's API group
// ("" or events.k8s.io; "" for expire and deletenamespace). Before is nil
// on a create, After on a delete.
type Write struct {
	Verb, Group, Namespace, Name string
	ResourceVersion              string
	Before, After                *corev1.Event
}

// ServiceAccount names the owner of a service account token.
type ServiceAccount struct {
	Namespace, Name string
	UID             types.UID
}

// New makes a Server holding the namespaces a new cluster has (default,
// kube-system, kube-public, kube-node-lease), ready.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		opts:     opts,
		st:       newStore(opts.Now),
		tokens:   map[string]identity{},
		ready:    true,
		rng:      rand.New(rand.NewPCG(opts.Seed, 0x61706d6f64656c)),
		endWatch: make(chan struct{}),
	}
	s.nextCompaction = opts.Now().Add(opts.CompactionInterval)
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		s.CreateNamespace(ns)
	}
	return s
}

// RESTConfig is a client config for token: the model's transport, no TLS,
// QPS and Burst left 0 (client-go's defaults).
func (s *Server) RESTConfig(token string) *rest.Config {
	return &rest.Config{Host: Host, Transport: s.Transport(), BearerToken: token}
}

// Transport is the model as an http.RoundTripper (see transport.go).
func (s *Server) Transport() http.RoundTripper { return transport{s} }

// AddUser adds a static token (as --token-auth-file): username with
// groups, and system:authenticated; its uid is the user name (as
// internal/harness/kubelocal's token file has it).
func (s *Server) AddUser(token, username string, groups ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = identity{name: username, uid: username, groups: withAuthenticated(groups)}
}

// AddServiceAccountToken adds a service account token issued for
// audiences (nil: APIAudience) that expires at expires (zero: never). Its
// user is the service account's, as the API server names it, with the
// groups and credential-id extra of a TokenRequest token.
func (s *Server) AddServiceAccountToken(token string, sa ServiceAccount, audiences []string, expires time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if audiences == nil {
		audiences = []string{APIAudience}
	}
	s.tokens[token] = identity{
		name:      "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		uid:       string(sa.UID),
		groups:    []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
		extra:     map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=" + s.newUIDLocked()}},
		audiences: slices.Clone(audiences),
		expires:   expires,
	}
}

func withAuthenticated(groups []string) []string {
	out := slices.Clone(groups)
	if !slices.Contains(out, "system:authenticated") {
		out = append(out, "system:authenticated")
	}
	return out
}

// Allow adds an RBAC rule: user may do verbs on resource of API group
// group in namespace ("": cluster-wide, and cluster-scoped resources).
// "*" in verbs, group or resource matches any. The group system:masters
// may do anything without a rule.
func (s *Server) Allow(user string, verbs []string, group, resource, namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rule{user: user, verbs: slices.Clone(verbs), group: group, resource: resource, namespace: namespace})
}

// CreateNamespace creates namespace name (nothing if it exists).
func (s *Server) CreateNamespace(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.get(storeNamespaces, name) != nil {
		return
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.fillSystemFieldsLocked(ns)
	prepareNamespace(ns)
	s.st.put(storeNamespaces, name, ns, time.Time{})
}

// DeleteNamespace deletes namespace name and every object in it at once
// (the real one is Terminating until its content is gone).
func (s *Server) DeleteNamespace(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maintainLocked()
	for _, space := range []string{storeEvents, storeLeases} {
		keys := make([]string, 0)
		for k := range s.st.objects[space] {
			if ns, _ := splitKey(k); ns == name {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			before := s.st.get(space, k)
			rv := s.st.put(space, k, nil, time.Time{})
			if space == storeEvents {
				s.journalLocked("deletenamespace", "", before, nil, rv)
			}
		}
	}
	if s.st.get(storeNamespaces, name) != nil {
		s.st.put(storeNamespaces, name, nil, time.Time{})
	}
}

// Compact forgets the watch history up to now, as the API server's etcd
// compaction does: a watch from a resourceVersion older than the current
// one, or a list (or a continue token) at one, answers 410 Expired.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maintainLocked()
	s.st.compact()
}

// SetReady false models a kube-apiserver that just started: its RBAC
// informers have not synced, so every request of a user outside
// system:masters gets 403 (/readyz too), and /readyz fails for the rest.
// SetReady true: serving as usual.
func (s *Server) SetReady(ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = ready
}

// SetRoleBindingsSynced false models a kube-apiserver further into its
// start: its ClusterRoleBindings have synced, its RoleBindings not yet. A
// rule of Allow for one namespace allows nothing (a SubjectAccessReview
// for it answers denied), cluster-wide rules do, and /readyz fails.
func (s *Server) SetRoleBindingsSynced(synced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roleBindingsUnsynced = !synced
}

// EndWatches ends every open watch, as a restarting API server's closed
// connections do: each body reads to its end.
func (s *Server) EndWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.endWatch)
	s.endWatch = make(chan struct{})
}

// Events is every stored Event (expired ones gone), as core/v1 shows it,
// sorted by namespace/name.
func (s *Server) Events() []corev1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maintainLocked()
	objs := s.st.snapshot(storeEvents, s.st.rv, func(string, runtime.Object) bool { return true })
	out := make([]corev1.Event, len(objs))
	for i, o := range objs {
		out[i] = *o.(*corev1.Event).DeepCopy()
	}
	return out
}

// Writes is every accepted Event write so far, in order (copies).
func (s *Server) Writes() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maintainLocked()
	out := make([]Write, len(s.writes))
	for i, w := range s.writes {
		out[i] = w
		out[i].Before, out[i].After = w.Before.DeepCopy(), w.After.DeepCopy()
	}
	return out
}

// journalLocked records an Event write.
func (s *Server) journalLocked(verb, group string, before, after runtime.Object, rv int64) {
	w := Write{Verb: verb, Group: group, ResourceVersion: strconv.FormatInt(rv, 10)}
	if before != nil {
		w.Before = before.(*corev1.Event)
		w.Namespace, w.Name = w.Before.Namespace, w.Before.Name
	}
	if after != nil {
		w.After = after.(*corev1.Event)
		w.Namespace, w.Name = w.After.Namespace, w.After.Name
	}
	s.writes = append(s.writes, w)
}

// maintainLocked does what the API server and etcd do on their own, up to
// now: the compactions due and the Events whose TTL passed.
func (s *Server) maintainLocked() {
	now := s.opts.Now()
	for s.opts.CompactionInterval > 0 && !s.nextCompaction.After(now) {
		if s.compactAt > 0 {
			s.st.compactAt(s.compactAt)
		}
		s.compactAt = s.st.revisionAt(s.nextCompaction)
		s.nextCompaction = s.nextCompaction.Add(s.opts.CompactionInterval)
	}
	for _, r := range s.st.expire(now) {
		if r.store == storeEvents {
			s.journalLocked("expire", "", r.prev, nil, r.rv)
		}
	}
}

// fillSystemFieldsLocked sets what the API server sets on a create.
func (s *Server) fillSystemFieldsLocked(m metav1.Object) {
	m.SetUID(types.UID(s.newUIDLocked()))
	m.SetCreationTimestamp(metav1.NewTime(s.opts.Now().Truncate(time.Second)))
}

// newUIDLocked is a version 4 UUID from the Server's seeded generator.
func (s *Server) newUIDLocked() string {
	hi, lo := s.rng.Uint64(), s.rng.Uint64()
	hi = hi&^0xf000 | 0x4000               // version 4
	lo = lo&^(0xc<<60) | 0x8<<60           // variant 10
	h := fmt.Sprintf("%016x%016x", hi, lo) // 32 hex digits
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
}

// generateNameLocked is the API server's SimpleNameGenerator: the base
// cut to 58 characters and five random ones.
func (s *Server) generateNameLocked(base string) string {
	const alphanums = "bcdfghjklmnpqrstvwxz2456789"
	if len(base) > 58 {
		base = base[:58]
	}
	b := []byte(base)
	for range 5 {
		b = append(b, alphanums[s.rng.IntN(len(alphanums))])
	}
	return string(b)
}
