// Package kubetest runs a real etcd and kube-apiserver on loopback for tests,
// as a testing.T wrapper around internal/harness/kubelocal.
//
// The binaries are built by tools/kube/build.sh (make apiserver) into
// <repo root>/bin, or are looked up in $KUBETEST_BIN_DIR. When they are
// missing, Start skips the test, or fails it when CI=true.
package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubepool"
)

const (
	// BinDirEnv names the environment variable that points at a directory
	// holding the etcd and kube-apiserver binaries.
	BinDirEnv = kubelocal.BinDirEnv

	// AdminUser is the user name of the admin token (group system:masters).
	AdminUser = kubelocal.AdminUser

	defaultStartTimeout = 90 * time.Second
)

// Option configures Start. Every option but WithAPIServerFlags gives the
// test a server of its own (see Start).
type Option func(*settings)

type settings struct {
	local kubelocal.Options
	own   bool // not leased from the pool
}

// OwnServer gives the test a server no other test uses: for a test that
// stops and starts the API server, writes to etcd behind it, or changes how
// it answers (admission policies: a reset deletes them, but waits only until
// the namespaces and Events show it, not the API server's other caches).
// Compacting etcd needs no server of its own: a reset needs only the keys.
func OwnServer() Option {
	return func(s *settings) { s.own = true }
}

// WithAPIServerFlags appends flags (in --name=value form) to the
// kube-apiserver command line; they come after the defaults, so a flag given
// here overrides a default one. Under the pool the test leases a server
// started with exactly these flags, if the pool has one (make test runs one
// with --watch-cache=false).
func WithAPIServerFlags(flags ...string) Option {
	return func(s *settings) {
		s.local.APIServerFlags = append(s.local.APIServerFlags, flags...)
	}
}

// WithEventRateLimit enables the EventRateLimit admission plugin with a single
// limit of type Server: qps events per second with the given burst. Only
// core/v1 Event creates are limited; rejected requests get HTTP 429.
func WithEventRateLimit(qps, burst int) Option {
	return func(s *settings) {
		s.own = true
		s.local.EventRateLimit = &kubelocal.RateLimit{QPS: qps, Burst: burst}
	}
}

// Server is an etcd plus a kube-apiserver listening on 127.0.0.1.
type Server struct {
	c *kubelocal.Cluster
}

// Start gives the test an etcd and kube-apiserver on loopback, ready
// (/readyz answers ok). Without options (or with WithAPIServerFlags only),
// and when make test runs the tests under internal/harness/kubepool
// ($KUBETEST_POOL), it is a shared server leased for the test: reset to the
// state it had when it started (no namespace, Event or other object a test
// made), reached through a proxy that closes the test's connections when the
// test ends. Its request metrics count on from earlier tests (read them as
// differences), and StopAPIServer and StartAPIServer fail on it: ask for
// OwnServer. Otherwise (another option, no pool, every such pooled server
// leased) Start runs etcd and kube-apiserver on free loopback ports in a
// fresh temp directory. A t.Cleanup ends the lease, or stops kube-apiserver,
// then etcd, and removes the directory; the processes also get SIGKILL
// (Linux) if the test binary dies first.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	kubelocal.RequireBinaries(t)
	s := settings{local: kubelocal.Options{StartTimeout: defaultStartTimeout}}
	for _, opt := range opts {
		opt(&s)
	}
	if pool := os.Getenv(kubepool.Env); pool != "" && !s.own {
		l, err := kubepool.Acquire(context.Background(), pool, s.local.APIServerFlags)
		if err != nil {
			t.Fatal(err)
		}
		if l != nil {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("kubetest: %s", l.Cluster.LogTail(40))
				}
				l.Release()
			})
			return &Server{c: l.Cluster}
		}
	}
	return startOwn(t, s.local)
}

// dirName is name with what a directory name should not hold replaced,
// cut to a length a path can afford.
func dirName(name string) string {
	name = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
			return r
		}
		return '_'
	}, name)
	return name[:min(len(name), 60)]
}

func startOwn(t testing.TB, o kubelocal.Options) *Server {
	t.Helper()
	// Not t.TempDir: etcd may still be writing when the testing package
	// removes it, and a failing test should be able to show the logs first.
	// Named after the test, as the processes' command lines then show.
	dir, err := os.MkdirTemp("", "kubetest-"+dirName(t.Name())+"-")
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	o.Dir = dir
	// Registered before anything starts, so that a failing Start cleans up
	// too (kubelocal.Start stops what it started itself).
	var c *kubelocal.Cluster
	t.Cleanup(func() {
		if c != nil {
			if t.Failed() {
				t.Logf("kubetest: %s", c.LogTail(40))
			}
			if err := c.Stop(); err != nil {
				t.Logf("kubetest: %v", err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("kubetest: %v", err)
		}
	})
	c, err = kubelocal.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{c: c}
}

// URL returns the API server's base URL, https://127.0.0.1:<port>. It stays the
// same across StopAPIServer/StartAPIServer.
func (s *Server) URL() string { return s.c.URL() }

// EtcdEndpoint returns etcd's client URL, http://127.0.0.1:<port>.
func (s *Server) EtcdEndpoint() string { return s.c.EtcdEndpoint() }

// Dir returns the server's temp directory (logs, certificates, etcd data).
func (s *Server) Dir() string { return s.c.Dir() }

// AdminToken returns the bearer token of AdminUser (group system:masters).
func (s *Server) AdminToken() string { return s.c.AdminToken() }

// RESTConfig returns a config for the admin token.
func (s *Server) RESTConfig() *rest.Config { return s.c.RESTConfig() }

// RESTConfigFor returns a config that authenticates with the given bearer
// token and trusts the API server's self-signed certificate. Client-side rate
// limiting is relaxed (QPS 100, burst 200).
func (s *Server) RESTConfigFor(token string) *rest.Config { return s.c.RESTConfigFor(token) }

// WatchClientset returns an admin clientset without the 30 s client timeout
// of Clientset, which would end a watch after 30 s with nothing but a closed
// channel: a test that watches longer than that would assert on half a
// history. Use it for watches only.
func (s *Server) WatchClientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cfg := s.RESTConfig()
	cfg.Timeout = 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubetest: watch clientset: %v", err)
	}
	return cs
}

// Clientset returns a clientset for the admin token. It is shared between
// callers and keeps working across StopAPIServer/StartAPIServer.
func (s *Server) Clientset() *kubernetes.Clientset {
	cs, err := s.c.Clientset()
	if err != nil {
		// Only a malformed rest.Config fails here, which is a bug in kubelocal.
		panic(err)
	}
	return cs
}

// Kubeconfig writes a kubeconfig for the admin token into a temp directory of
// t and returns its path.
func (s *Server) Kubeconfig(t testing.TB) string {
	t.Helper()
	return s.KubeconfigFor(t, kubelocal.AdminUser, s.AdminToken())
}

// KubeconfigFor writes a kubeconfig for another bearer token (NewUser's, a
// ServiceAccount's) and returns its path.
func (s *Server) KubeconfigFor(t testing.TB, user, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.c.WriteKubeconfigFor(path, user, token); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return path
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after a grace
// period); etcd keeps running. It does nothing if the API server is stopped,
// and fails on a shared server (Start). It is safe to call from any
// goroutine.
func (s *Server) StopAPIServer() error { return s.c.StopAPIServer() }

// StartAPIServer starts kube-apiserver again with the same flags, port,
// certificates and etcd, and waits until /readyz answers ok. If it does not
// get ready, the process is stopped and an error returned. It is safe to call
// from any goroutine.
func (s *Server) StartAPIServer() error { return s.c.StartAPIServer() }

// ServiceAccountToken asks the API server for a token of ServiceAccount
// namespace/name (TokenRequest) issued for audiences, valid for ttl
// (at least 10 minutes, the API server's minimum).
func (s *Server) ServiceAccountToken(t testing.TB, namespace, name string, ttl time.Duration, audiences ...string) string {
	t.Helper()
	secs := int64(ttl / time.Second)
	tr, err := s.Clientset().CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: token of %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// usersNamespace holds the ServiceAccounts NewUser makes.
const usersNamespace = "kubetest-users"

// NewUser makes a user for the test: ServiceAccount name in namespace
// kubetest-users, and returns its user name (as RBAC subjects and the API
// server's messages name it) and a bearer token for it (TokenRequest, an
// hour). Like any ServiceAccount it may do nothing beyond discovery until
// the test grants it a role (GrantRole). A ServiceAccount, not an entry in
// the API server's token file, so that a leased server serves it.
func (s *Server) NewUser(t testing.TB, name string) (user, token string) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Clientset().CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: usersNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubetest: user %s: %v", name, err)
	}
	_, err = s.Clientset().CoreV1().ServiceAccounts(usersNamespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: user %s: %v", name, err)
	}
	return "system:serviceaccount:" + usersNamespace + ":" + name, s.ServiceAccountToken(t, usersNamespace, name, time.Hour)
}

// ExpiredToken is token (issued by this API server) as it would be had it
// been issued an hour earlier: the same claims and a valid signature, but
// expired a minute ago (kubelocal.Cluster.ResignedToken).
func (s *Server) ExpiredToken(t testing.TB, token string) string {
	t.Helper()
	expired, err := s.c.ResignedToken(token, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return expired
}
