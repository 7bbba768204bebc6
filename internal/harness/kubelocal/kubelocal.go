// Package kubelocal runs a real etcd and kube-apiserver on loopback, for
// tests (through internal/harness/kubetest) and for the demo behind make run.
//
// The binaries are built by tools/kube/build.sh (make apiserver) into
// <repo root>/bin, or are looked up in $KUBETEST_BIN_DIR. Nothing here needs
// a testing.T: the caller owns the Cluster and must Stop it.
package kubelocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

const (
	// BinDirEnv names the environment variable that points at a directory
	// holding the etcd and kube-apiserver binaries.
	BinDirEnv = "KUBETEST_BIN_DIR"

	// AdminUser is the user name of the admin token (group system:masters).
	AdminUser = "kubelocal-admin"

	etcdBinary      = "etcd"
	apiserverBinary = "kube-apiserver"
	etcdLog         = "etcd.log"
	apiserverLog    = "kube-apiserver.log"

	loopback = "127.0.0.1"

	defaultStartTimeout = 90 * time.Second
	stopGracePeriod     = 15 * time.Second
	pollInterval        = 100 * time.Millisecond
)

// childEnv is etcd's and kube-apiserver's environment beyond the test's:
// GOGC=400 trades their memory for CPU. Starting is allocation-heavy (every
// served type's storage and OpenAPI schema), a test run starts many servers,
// and make test is bound by the machine's cores, not its memory.
var childEnv = []string{"GOGC=400"}

// RateLimit configures the EventRateLimit admission plugin with one limit of
// type Server. Only core/v1 Event creates are limited; rejected requests get
// HTTP 429.
type RateLimit struct {
	QPS, Burst int
}

// Options configures Start.
type Options struct {
	// BinDir holds etcd and kube-apiserver; empty: FindBinDir.
	BinDir string
	// Dir receives etcd's data, certificates, key, token file and logs. It is
	// created if missing and left in place by Stop. Empty: a fresh temp
	// directory that Stop removes.
	Dir string
	// APIServerFlags (--name=value) come after the defaults, so they override
	// them.
	APIServerFlags []string
	// EventRateLimit, when set, enables the EventRateLimit admission plugin.
	EventRateLimit *RateLimit
	// StartTimeout bounds how long Start and StartAPIServer wait for each
	// process to become ready; default 90s.
	StartTimeout time.Duration
}

// Cluster is an etcd plus a kube-apiserver listening on 127.0.0.1.
type Cluster struct {
	dir, ownDir string // ownDir is removed by Stop (it was made by Start)
	attached    bool   // another process runs etcd and kube-apiserver (Attach)
	timeout     time.Duration

	etcdBin, apiserverBin string
	etcdURL               string
	etcdPorts             []int
	apiserverPort         int
	apiserverArgs         []string
	adminToken            string

	mu        sync.Mutex
	etcd      *childproc.Process
	apiserver *childproc.Process
	caData    []byte
	clientset *kubernetes.Clientset
}

// FindBinDir returns $KUBETEST_BIN_DIR, or else the bin directory next to the
// nearest go.mod above the working directory (the repository root when run
// by go test or from the repository).
func FindBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	root, err := childproc.ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("find bin dir ($%s unset): %w", BinDirEnv, err)
	}
	return filepath.Join(root, "bin"), nil
}

// FindBinaries returns the paths of etcd and kube-apiserver in binDir (empty:
// FindBinDir), or an error saying what is missing.
func FindBinaries(binDir string) (etcd, apiserver string, err error) {
	if binDir == "" {
		if binDir, err = FindBinDir(); err != nil {
			return "", "", err
		}
	}
	etcd = filepath.Join(binDir, etcdBinary)
	apiserver = filepath.Join(binDir, apiserverBinary)
	for _, b := range []string{etcd, apiserver} {
		if fi, err := os.Stat(b); err != nil || fi.IsDir() {
			return "", "", fmt.Errorf("%s not found; run make apiserver (or tools/kube/build.sh bin) or set $%s", b, BinDirEnv)
		}
	}
	return etcd, apiserver, nil
}

// TB is the part of testing.TB that RequireBinaries uses.
type TB interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

// RequireBinaries skips a test when etcd or kube-apiserver is missing from
// FindBinDir, and fails it instead when $CI is true: CI must run every test.
func RequireBinaries(t TB) {
	t.Helper()
	if _, _, err := FindBinaries(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// Start runs etcd and kube-apiserver on free loopback ports and waits until
// /readyz answers ok. ctx bounds only the start-up; the processes run until
// Stop, or (Linux) until this process dies: they get SIGKILL then. On error
// everything started is stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	etcdBin, apiserverBin, err := FindBinaries(opts.BinDir)
	if err != nil {
		return nil, fmt.Errorf("kubelocal: %w", err)
	}
	c := &Cluster{
		dir:          opts.Dir,
		timeout:      opts.StartTimeout,
		etcdBin:      etcdBin,
		apiserverBin: apiserverBin,
	}
	if c.timeout <= 0 {
		c.timeout = defaultStartTimeout
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "kubelocal-"); err != nil {
			return nil, fmt.Errorf("kubelocal: %w", err)
		}
		c.ownDir = c.dir
	} else if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("kubelocal: %w", err)
	}

	err = c.startEtcd(ctx)
	if err == nil {
		err = c.prepareAPIServer(&opts)
	}
	if err == nil {
		err = c.startAPIServer(ctx)
	}
	if err != nil {
		if serr := c.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, fmt.Errorf("kubelocal: %w", err)
	}
	return c, nil
}

// URL returns the API server's base URL, https://127.0.0.1:<port>. It stays the
// same across StopAPIServer/StartAPIServer.
func (c *Cluster) URL() string {
	return "https://" + net.JoinHostPort(loopback, strconv.Itoa(c.apiserverPort))
}

// EtcdEndpoint returns etcd's client URL, http://127.0.0.1:<port>.
func (c *Cluster) EtcdEndpoint() string { return c.etcdURL }

// Dir returns the cluster's directory (logs, certificates, etcd data).
func (c *Cluster) Dir() string { return c.dir }

// AdminToken returns the bearer token of AdminUser (group system:masters).
func (c *Cluster) AdminToken() string { return c.adminToken }

// RESTConfig returns a config for the admin token.
func (c *Cluster) RESTConfig() *rest.Config { return c.RESTConfigFor(c.adminToken) }

// RESTConfigFor returns a config that authenticates with the given bearer
// token and trusts the API server's self-signed certificate (from
// <dir>/certs/apiserver.crt). Client-side rate limiting is relaxed (QPS 100,
// burst 200) because callers drive storms at it.
func (c *Cluster) RESTConfigFor(token string) *rest.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restConfigLocked(token)
}

func (c *Cluster) restConfigLocked(token string) *rest.Config {
	cfg := &rest.Config{
		Host:        c.URL(),
		BearerToken: token,
		QPS:         100,
		Burst:       200,
		Timeout:     30 * time.Second,
	}
	if len(c.caData) > 0 {
		cfg.CAData = bytes.Clone(c.caData)
	} else {
		cfg.Insecure = true
	}
	return cfg
}

// Clientset returns a clientset for the admin token. It is shared between
// callers and keeps working across StopAPIServer/StartAPIServer.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clientset == nil {
		cs, err := kubernetes.NewForConfig(c.restConfigLocked(c.adminToken))
		if err != nil {
			return nil, fmt.Errorf("kubelocal: clientset: %w", err)
		}
		c.clientset = cs
	}
	return c.clientset, nil
}

// WriteKubeconfig writes a kubeconfig for the admin token (context
// "kubelocal", namespace default) to path, mode 0600.
func (c *Cluster) WriteKubeconfig(path string) error {
	return c.WriteKubeconfigFor(path, AdminUser, c.AdminToken())
}

// WriteKubeconfigFor writes a kubeconfig for another bearer token (a user of
// the token file, a ServiceAccount's token) to path, mode 0600.
func (c *Cluster) WriteKubeconfigFor(path, user, token string) error {
	rc := c.RESTConfigFor(token)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubelocal"] = &clientcmdapi.Cluster{
		Server:                   rc.Host,
		CertificateAuthorityData: rc.CAData,
		InsecureSkipTLSVerify:    rc.Insecure,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["kubelocal"] = &clientcmdapi.Context{Cluster: "kubelocal", AuthInfo: user, Namespace: "default"}
	kc.CurrentContext = "kubelocal"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("kubelocal: write kubeconfig: %w", err)
	}
	return nil
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after a grace
// period); etcd keeps running. It does nothing if the API server is stopped.
// It is safe to call from any goroutine.
func (c *Cluster) StopAPIServer() error {
	if c.attached {
		return errAttached
	}
	c.mu.Lock()
	p := c.apiserver
	c.apiserver = nil
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Stop(stopGracePeriod)
}

// StartAPIServer starts kube-apiserver again with the same flags, port,
// certificates and etcd, and waits until /readyz answers ok (at most the
// start timeout). If it does not get ready, the process is stopped and an
// error returned. It is safe to call from any goroutine.
func (c *Cluster) StartAPIServer() error {
	if c.attached {
		return errAttached
	}
	return c.startAPIServer(context.Background())
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	c.mu.Lock()
	if c.apiserver != nil {
		c.mu.Unlock()
		return errors.New("kube-apiserver is already running")
	}
	p, err := childproc.Start(c.apiserverBin, c.apiserverArgs, childEnv, filepath.Join(c.dir, apiserverLog))
	if err == nil {
		c.apiserver = p
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}

	err = c.waitReady(ctx, p)
	var ca []byte
	if err == nil {
		ca, err = os.ReadFile(filepath.Join(c.dir, "certs", "apiserver.crt"))
	}
	c.mu.Lock()
	if err == nil {
		c.caData = ca
	} else if c.apiserver == p {
		c.apiserver = nil
	}
	c.mu.Unlock()
	if err != nil {
		_ = p.Stop(stopGracePeriod)
	}
	return err
}

// PIDs returns the process IDs of the cluster's own etcd and kube-apiserver
// (none when attached, or once stopped), etcd's first.
func (c *Cluster) PIDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, p := range []*childproc.Process{c.etcd, c.apiserver} {
		if p != nil {
			pids = append(pids, p.Pid())
		}
	}
	return pids
}

// Stop stops kube-apiserver, then etcd, and removes the directory if Start
// made it. It is idempotent.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	api, etcd := c.apiserver, c.etcd
	c.apiserver, c.etcd = nil, nil
	c.mu.Unlock()
	var errs []error
	if api != nil {
		if err := api.Stop(stopGracePeriod); err != nil {
			errs = append(errs, fmt.Errorf("stop kube-apiserver: %w", err))
		}
	}
	if etcd != nil {
		if err := etcd.Stop(stopGracePeriod); err != nil {
			errs = append(errs, fmt.Errorf("stop etcd: %w", err))
		}
	}
	if c.ownDir != "" {
		if err := os.RemoveAll(c.ownDir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", c.ownDir, err))
		}
	}
	return errors.Join(errs...)
}

// LogTail returns the last lines of the kube-apiserver and etcd logs, for
// diagnosing a failure; read before Stop when the directory is Start's own.
func (c *Cluster) LogTail(lines int) string {
	var b strings.Builder
	for _, name := range []string{apiserverLog, etcdLog} {
		data, err := os.ReadFile(filepath.Join(c.dir, name))
		if err != nil {
			continue
		}
		ls := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(ls) > lines {
			ls = ls[len(ls)-lines:]
		}
		fmt.Fprintf(&b, "last lines of %s:\n%s\n", name, strings.Join(ls, "\n"))
	}
	return b.String()
}
