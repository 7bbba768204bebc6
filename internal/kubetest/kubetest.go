// Package kubetest runs a real etcd and kube-apiserver on loopback for tests.
//
// The binaries are built by tools/kube/build.sh (make apiserver) into
// <repo root>/bin, or are looked up in $KUBETEST_BIN_DIR. When they are
// missing, Start skips the test, or fails it when CI=true.
package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// BinDirEnv names the environment variable that points at a directory
	// holding the etcd and kube-apiserver binaries.
	BinDirEnv = "KUBETEST_BIN_DIR"

	// AdminUser is the user name of the admin token (group system:masters).
	AdminUser = "kubetest-admin"

	etcdBinary      = "etcd"
	apiserverBinary = "kube-apiserver"

	loopback = "127.0.0.1"

	defaultStartTimeout = 90 * time.Second
	stopGracePeriod     = 15 * time.Second
	pollInterval        = 100 * time.Millisecond
)

// User is an extra entry of the API server's static token file.
type User struct {
	Name   string
	UID    string // defaults to Name
	Token  string
	Groups []string
}

// Option configures Start.
type Option func(*config)

type config struct {
	users          []User
	apiserverFlags []string
	rateLimit      *eventRateLimit
	startTimeout   time.Duration
}

type eventRateLimit struct {
	qps, burst int
}

// WithUser adds a user with the given bearer token to the API server's token
// file. The user has no RBAC role unless the test grants one (or lists
// "system:masters" among groups).
func WithUser(name, token string, groups ...string) Option {
	return func(c *config) {
		c.users = append(c.users, User{Name: name, Token: token, Groups: groups})
	}
}

// WithAPIServerFlags appends flags (in --name=value form) to the
// kube-apiserver command line; they come after the defaults, so a flag given
// here overrides a default one.
func WithAPIServerFlags(flags ...string) Option {
	return func(c *config) {
		c.apiserverFlags = append(c.apiserverFlags, flags...)
	}
}

// WithEventRateLimit enables the EventRateLimit admission plugin with a single
// limit of type Server: qps events per second with the given burst. It writes
// the AdmissionConfiguration and passes --enable-admission-plugins and
// --admission-control-config-file. Only core/v1 Event creates are limited;
// rejected requests get HTTP 429.
func WithEventRateLimit(qps, burst int) Option {
	return func(c *config) {
		c.rateLimit = &eventRateLimit{qps: qps, burst: burst}
	}
}

// WithStartTimeout bounds how long Start and StartAPIServer wait for etcd and
// kube-apiserver to become ready (default 90s).
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) {
		c.startTimeout = d
	}
}

// Server is an etcd plus a kube-apiserver listening on 127.0.0.1.
type Server struct {
	t       testing.TB
	dir     string
	timeout time.Duration

	etcdBin, apiserverBin string
	etcdURL               string
	etcdPorts             []int
	apiserverPort         int
	apiserverArgs         []string
	adminToken            string

	mu        sync.Mutex
	etcd      *process
	apiserver *process
	caData    []byte
	clientset *kubernetes.Clientset
}

// Start runs etcd and kube-apiserver on free loopback ports in a fresh temp
// directory and waits until /readyz answers ok. A t.Cleanup stops
// kube-apiserver, then etcd, and removes the directory; the processes also get
// SIGKILL (Linux) if the test binary dies first.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := config{startTimeout: defaultStartTimeout}
	for _, o := range opts {
		o(&cfg)
	}

	etcdBin, apiserverBin, missing := findBinaries()
	if missing != "" {
		msg := "kubetest: " + missing + "; run make apiserver (or tools/kube/build.sh bin) or set $" + BinDirEnv
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	s := &Server{
		t:            t,
		dir:          dir,
		timeout:      cfg.startTimeout,
		etcdBin:      etcdBin,
		apiserverBin: apiserverBin,
	}
	// Registered before any process starts, so that a failing Start cleans
	// up too.
	t.Cleanup(s.cleanup)

	if err := s.startEtcd(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if err := s.prepareAPIServer(&cfg); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if err := s.StartAPIServer(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return s
}

// URL returns the API server's base URL, https://127.0.0.1:<port>. It stays the
// same across StopAPIServer/StartAPIServer.
func (s *Server) URL() string {
	return "https://" + net.JoinHostPort(loopback, strconv.Itoa(s.apiserverPort))
}

// EtcdEndpoint returns etcd's client URL, http://127.0.0.1:<port>.
func (s *Server) EtcdEndpoint() string { return s.etcdURL }

// Dir returns the server's temp directory (logs, certificates, etcd data).
func (s *Server) Dir() string { return s.dir }

// AdminToken returns the bearer token of AdminUser (group system:masters).
func (s *Server) AdminToken() string { return s.adminToken }

// RESTConfig returns a config for the admin token.
func (s *Server) RESTConfig() *rest.Config {
	return s.RESTConfigFor(s.adminToken)
}

// RESTConfigFor returns a config that authenticates with the given bearer
// token and trusts the API server's self-signed certificate (from
// <cert dir>/apiserver.crt). Client-side rate limiting is relaxed (QPS 100,
// burst 200).
func (s *Server) RESTConfigFor(token string) *rest.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restConfigLocked(token)
}

func (s *Server) restConfigLocked(token string) *rest.Config {
	cfg := &rest.Config{
		Host:        s.URL(),
		BearerToken: token,
		QPS:         100,
		Burst:       200,
		Timeout:     30 * time.Second,
	}
	if len(s.caData) > 0 {
		cfg.CAData = bytes.Clone(s.caData)
	} else {
		cfg.Insecure = true
	}
	return cfg
}

// Clientset returns a clientset for the admin token. It is shared between
// callers and keeps working across StopAPIServer/StartAPIServer.
func (s *Server) Clientset() *kubernetes.Clientset {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clientset == nil {
		cs, err := kubernetes.NewForConfig(s.restConfigLocked(s.adminToken))
		if err != nil {
			panic(fmt.Sprintf("kubetest: clientset: %v", err))
		}
		s.clientset = cs
	}
	return s.clientset
}

// Kubeconfig writes a kubeconfig for the admin token into a temp directory of
// t and returns its path.
func (s *Server) Kubeconfig(t testing.TB) string {
	t.Helper()
	rc := s.RESTConfig()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{
		Server:                   rc.Host,
		CertificateAuthorityData: rc.CAData,
		InsecureSkipTLSVerify:    rc.Insecure,
	}
	kc.AuthInfos["kubetest-admin"] = &clientcmdapi.AuthInfo{Token: rc.BearerToken}
	kc.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "kubetest-admin", Namespace: "default"}
	kc.CurrentContext = "kubetest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("kubetest: write kubeconfig: %v", err)
	}
	return path
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after a grace
// period); etcd keeps running. It does nothing if the API server is stopped.
// It is safe to call from any goroutine.
func (s *Server) StopAPIServer() error {
	s.mu.Lock()
	p := s.apiserver
	s.apiserver = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop(stopGracePeriod)
}

// StartAPIServer starts kube-apiserver again with the same flags, port,
// certificates and etcd, and waits until /readyz answers ok. If it does not
// get ready, the process is stopped and an error returned. It is safe to call
// from any goroutine.
func (s *Server) StartAPIServer() error {
	s.mu.Lock()
	if s.apiserver != nil {
		s.mu.Unlock()
		return errors.New("kube-apiserver is already running")
	}
	p, err := startProcess(s.apiserverBin, s.apiserverArgs, filepath.Join(s.dir, "kube-apiserver.log"))
	if err == nil {
		s.apiserver = p
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}

	err = s.waitReady(p)
	var ca []byte
	if err == nil {
		ca, err = os.ReadFile(filepath.Join(s.dir, "certs", "apiserver.crt"))
	}
	s.mu.Lock()
	if err == nil {
		s.caData = ca
	} else if s.apiserver == p {
		s.apiserver = nil
	}
	s.mu.Unlock()
	if err != nil {
		_ = p.stop(stopGracePeriod)
	}
	return err
}

func (s *Server) cleanup() {
	s.mu.Lock()
	api, etcd := s.apiserver, s.etcd
	s.apiserver, s.etcd = nil, nil
	s.mu.Unlock()
	if s.t.Failed() {
		s.logTail("kube-apiserver.log")
		s.logTail("etcd.log")
	}
	if api != nil {
		if err := api.stop(stopGracePeriod); err != nil {
			s.t.Logf("kubetest: stop kube-apiserver: %v", err)
		}
	}
	if etcd != nil {
		if err := etcd.stop(stopGracePeriod); err != nil {
			s.t.Logf("kubetest: stop etcd: %v", err)
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		s.t.Logf("kubetest: remove %s: %v", s.dir, err)
	}
}

// logTail logs the last lines of a process log, for failed tests.
func (s *Server) logTail(name string) {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	s.t.Logf("kubetest: last lines of %s:\n%s", name, strings.Join(lines, "\n"))
}

func (s *Server) startEtcd() error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort(clientPort)
	if err != nil {
		return err
	}
	s.etcdPorts = []int{clientPort, peerPort}
	s.etcdURL = "http://" + net.JoinHostPort(loopback, strconv.Itoa(clientPort))
	peerURL := "http://" + net.JoinHostPort(loopback, strconv.Itoa(peerPort))
	args := []string{
		"--name=kubetest",
		"--data-dir=" + filepath.Join(s.dir, "etcd"),
		"--listen-client-urls=" + s.etcdURL,
		"--advertise-client-urls=" + s.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kubetest=" + peerURL,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
	p, err := startProcess(s.etcdBin, args, filepath.Join(s.dir, "etcd.log"))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.etcd = p
	s.mu.Unlock()

	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(s.timeout)
	for {
		if ok, err := etcdHealthy(client, s.etcdURL+"/health"); ok {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("etcd not healthy after %v: %v (log: %s)", s.timeout, err, filepath.Join(s.dir, "etcd.log"))
		}
		select {
		case <-p.done:
			return fmt.Errorf("etcd exited during startup: %v\n%s", p.err, tail(filepath.Join(s.dir, "etcd.log")))
		case <-time.After(pollInterval):
		}
	}
}

func etcdHealthy(client *http.Client, url string) (bool, error) {
	resp, err := client.Get(url)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"health":"true"`) {
		return false, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return true, nil
}

// prepareAPIServer writes the key, token and admission files and fixes the
// command line used by every StartAPIServer.
func (s *Server) prepareAPIServer(cfg *config) error {
	port, err := freePort(s.etcdPorts...)
	if err != nil {
		return err
	}
	s.apiserverPort = port
	s.adminToken = randomToken()

	saKey := filepath.Join(s.dir, "sa.key")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(saKey, keyPEM, 0o600); err != nil {
		return err
	}

	users := append([]User{{Name: AdminUser, Token: s.adminToken, Groups: []string{"system:masters"}}}, cfg.users...)
	var tokens strings.Builder
	for _, u := range users {
		if u.Token == "" || u.Name == "" || strings.ContainsAny(u.Token+u.Name+u.UID, ",\"\n") {
			return fmt.Errorf("invalid user %q: need a name and a token without commas, quotes or newlines", u.Name)
		}
		uid := u.UID
		if uid == "" {
			uid = u.Name
		}
		fmt.Fprintf(&tokens, "%s,%s,%s", u.Token, u.Name, uid)
		if len(u.Groups) > 0 {
			fmt.Fprintf(&tokens, ",%q", strings.Join(u.Groups, ","))
		}
		tokens.WriteString("\n")
	}
	tokenFile := filepath.Join(s.dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		return err
	}

	certDir := filepath.Join(s.dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	args := []string{
		"--etcd-servers=" + s.etcdURL,
		"--bind-address=" + loopback,
		"--advertise-address=" + loopback,
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--profiling=false",
	}
	if rl := cfg.rateLimit; rl != nil {
		file, err := writeEventRateLimitConfig(s.dir, rl.qps, rl.burst)
		if err != nil {
			return err
		}
		args = append(args,
			"--enable-admission-plugins=EventRateLimit",
			"--admission-control-config-file="+file,
		)
	}
	s.apiserverArgs = append(args, cfg.apiserverFlags...)
	return nil
}

func writeEventRateLimitConfig(dir string, qps, burst int) (string, error) {
	limits := filepath.Join(dir, "eventratelimit.yaml")
	admission := filepath.Join(dir, "admission.yaml")
	limitsYAML := fmt.Sprintf(`apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- type: Server
  qps: %d
  burst: %d
`, qps, burst)
	admissionYAML := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  path: %s
`, strconv.Quote(limits))
	if err := os.WriteFile(limits, []byte(limitsYAML), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(admission, []byte(admissionYAML), 0o600); err != nil {
		return "", err
	}
	return admission, nil
}

// waitReady polls /readyz with the admin token until it answers ok.
func (s *Server) waitReady(p *process) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			// The serving certificate does not exist before the server
			// starts; it is trusted from apiserver.crt afterwards.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		},
	}
	defer client.CloseIdleConnections()
	url := s.URL() + "/readyz"
	deadline := time.Now().Add(s.timeout)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		lastErr = readyz(ctx, client, url, s.adminToken)
		cancel()
		if lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after %v: %v\n%s", s.timeout, lastErr, tail(filepath.Join(s.dir, "kube-apiserver.log")))
		}
		select {
		case <-p.done:
			return fmt.Errorf("kube-apiserver exited during startup: %v\n%s", p.err, tail(filepath.Join(s.dir, "kube-apiserver.log")))
		case <-time.After(pollInterval):
		}
	}
}

func readyz(ctx context.Context, client *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != "ok" {
		return fmt.Errorf("/readyz: status %d: %s", resp.StatusCode, b)
	}
	return nil
}

// process is a child process whose output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done is closed
}

func startProcess(bin string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	onSpawnThread(func() { err = cmd.Start() })
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{name: filepath.Base(bin), cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM, waits up to grace and then kills the process.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %v after SIGTERM; killed it", p.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

func randomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// freePort returns a port on 127.0.0.1 that is free right now. It prefers
// ports below the usual ephemeral ranges (Linux 32768-60999, macOS
// 49152-65535), so that client connections made while the API server is
// stopped cannot take its port before StartAPIServer binds it again.
func freePort(exclude ...int) (int, error) {
	for range 100 {
		b := make([]byte, 2)
		if _, err := rand.Read(b); err != nil {
			return 0, err
		}
		port := 20000 + (int(b[0])<<8|int(b[1]))%12000
		if slices.Contains(exclude, port) {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// findBinaries looks for the binaries in $KUBETEST_BIN_DIR, or else in the
// bin directory next to the nearest go.mod above the working directory (the
// repository root when run by go test). missing says what is missing, if
// anything.
func findBinaries() (etcd, apiserver, missing string) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", "", err.Error()
		}
		for d := wd; dir == ""; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "bin")
			} else if filepath.Dir(d) == d {
				return "", "", "no go.mod above " + wd + " to find bin/ in"
			}
		}
	}
	etcd = filepath.Join(dir, etcdBinary)
	apiserver = filepath.Join(dir, apiserverBinary)
	for _, b := range []string{etcd, apiserver} {
		if fi, err := os.Stat(b); err != nil || fi.IsDir() {
			return "", "", b + " not found"
		}
	}
	return etcd, apiserver, ""
}
