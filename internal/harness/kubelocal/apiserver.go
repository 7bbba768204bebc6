package kubelocal

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

func (c *Cluster) startEtcd(ctx context.Context) error {
	clientPort, err := childproc.FreePort()
	if err != nil {
		return err
	}
	peerPort, err := childproc.FreePort(clientPort)
	if err != nil {
		return err
	}
	c.etcdPorts = []int{clientPort, peerPort}
	c.etcdURL = "http://" + net.JoinHostPort(loopback, strconv.Itoa(clientPort))
	peerURL := "http://" + net.JoinHostPort(loopback, strconv.Itoa(peerPort))
	args := []string{
		"--name=kubelocal",
		"--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kubelocal=" + peerURL,
		"--initial-cluster-state=new",
		// Nothing here must survive a crash; fsync only slows the storms.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
	logPath := filepath.Join(c.dir, etcdLog)
	p, err := childproc.Start(c.etcdBin, args, childEnv, logPath)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = p
	c.mu.Unlock()

	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(c.timeout)
	for {
		ok, err := etcdHealthy(ctx, client, c.etcdURL+"/health")
		switch {
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("etcd not healthy after %v: %w (log: %s)", c.timeout, err, logPath)
		}
		select {
		case <-p.Done():
			_, err := p.Exited()
			return fmt.Errorf("etcd exited during startup: %v\n%s", err, tail(logPath))
		case <-ctx.Done():
			return fmt.Errorf("waiting for etcd: %w", ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

func etcdHealthy(ctx context.Context, client *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
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

// servedGroupVersions are the API groups the local API server serves: what
// the project's components, tests and Helm chart use, and what kube-apiserver
// itself needs to become ready (the aggregator, CRDs, priority and fairness,
// and the informers of its default admission plugins). Every other group is
// off: each served group costs every start its storage, watch caches and
// OpenAPI spec, and the tests start many servers.
var servedGroupVersions = []string{
	"api/all=false",
	// Used by the components, the tests and the Helm chart.
	"api/v1=true",
	"apps/v1=true",
	"authentication.k8s.io/v1=true",
	"authorization.k8s.io/v1=true",
	"coordination.k8s.io/v1=true",
	"events.k8s.io/v1=true",
	"policy/v1=true",
	"rbac.authorization.k8s.io/v1=true",
	"admissionregistration.k8s.io/v1=true",
	"networking.k8s.io/v1=true",
	// Needed by kube-apiserver itself to become ready.
	"apiregistration.k8s.io/v1=true",
	"apiextensions.k8s.io/v1=true",
	"flowcontrol.apiserver.k8s.io/v1=true",
	"discovery.k8s.io/v1=true",
	"node.k8s.io/v1=true",
	"scheduling.k8s.io/v1=true",
	"storage.k8s.io/v1=true",
}

// prepareAPIServer writes the key, token and admission files and fixes the
// command line used by every start of kube-apiserver.
func (c *Cluster) prepareAPIServer(opts *Options) error {
	port, err := childproc.FreePort(c.etcdPorts...)
	if err != nil {
		return err
	}
	c.apiserverPort = port
	if c.adminToken, err = randomToken(); err != nil {
		return err
	}

	saKey := filepath.Join(c.dir, serviceAccountKeyFile)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("service account key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(saKey, keyPEM, 0o600); err != nil {
		return err
	}

	// The static token file holds the admin only; tests make other users
	// as ServiceAccounts (kubetest's NewUser), which a shared server serves.
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", c.adminToken, AdminUser, AdminUser)
	tokenFile := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return err
	}

	certDir := filepath.Join(c.dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	if err := writeServingCert(certDir); err != nil {
		return err
	}
	args := []string{
		"--etcd-servers=" + c.etcdURL,
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
		"--runtime-config=" + strings.Join(servedGroupVersions, ","),
	}
	if rl := opts.EventRateLimit; rl != nil {
		file, err := writeEventRateLimitConfig(c.dir, rl.QPS, rl.Burst)
		if err != nil {
			return err
		}
		args = append(args,
			"--enable-admission-plugins=EventRateLimit",
			"--admission-control-config-file="+file,
		)
	}
	c.apiserverArgs = append(args, opts.APIServerFlags...)
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
func (c *Cluster) waitReady(ctx context.Context, p *childproc.Process) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			// The serving certificate does not exist before the server
			// starts; it is trusted from apiserver.crt afterwards.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		},
	}
	defer client.CloseIdleConnections()
	url := c.URL() + "/readyz"
	logPath := filepath.Join(c.dir, apiserverLog)
	deadline := time.Now().Add(c.timeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := readyz(rctx, client, url, c.adminToken)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after %v: %w\n%s", c.timeout, err, tail(logPath))
		}
		select {
		case <-p.Done():
			_, err := p.Exited()
			return fmt.Errorf("kube-apiserver exited during startup: %v\n%s", err, tail(logPath))
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-apiserver: %w", ctx.Err())
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
