package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// authAudience is the audience of the ready configurations' k8stokenauth.
const authAudience = "otel-k8sevents"

// shortTTLs makes the ready configurations' caches forget in seconds, so
// that a test sees a revocation or a grant take effect without waiting
// minutes; the tests check the effect comes within these.
const (
	testAllowTTL = 3 * time.Second
	testDenyTTL  = 2 * time.Second
)

var shortTTLs = fmt.Sprintf(`
extensions:
  k8stokenauth:
    cache: {allow_ttl: %[1]s, deny_ttl: %[2]s}
    renew: {before: %[3]s}
receivers:
  k8seventsotlp:
    cache: {allow_ttl: %[1]s, deny_ttl: %[2]s}
`, testAllowTTL, testDenyTTL, testAllowTTL/2)

// authRig is a real API server with namespaces, ServiceAccounts and their
// Roles, and TLS certificates for the tiers.
type authRig struct {
	srv   *kubetest.Server
	tls   tlsFiles
	tier1 tier1Identity
}

func newAuthRig(t testing.TB, namespaces ...string) *authRig {
	t.Helper()
	r := &authRig{srv: kubetest.Start(t), tls: writeTLS(t, t.TempDir(), "tiers")}
	r.tier1 = newTier1Identity(t, r.srv)
	for _, ns := range namespaces {
		_, err := r.srv.Clientset().CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return r
}

// kubeEnv points a ready configuration at the API server, as its admin
// (what the collector's own ServiceAccount may do is deploy/'s test).
func (r *authRig) kubeEnv(t testing.TB) []string {
	return []string{"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + r.srv.Kubeconfig(t)}
}

// serviceAccount makes ServiceAccount ns/name, allowed to create Events
// (core group) in the namespaces given, and answers a token of it for the
// collector's audience.
func (r *authRig) serviceAccount(t testing.TB, ns, name string, createEventsIn ...string) string {
	t.Helper()
	_, err := r.srv.Clientset().CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, in := range createEventsIn {
		r.grant(t, in, ns, name)
	}
	return r.srv.ServiceAccountToken(t, ns, name, time.Hour, authAudience)
}

// grant lets ServiceAccount ns/name create Events in namespace in.
func (r *authRig) grant(t testing.TB, in, ns, name string) {
	t.Helper()
	ctx, cs := context.Background(), r.srv.Clientset()
	role := "create-events-" + ns + "-" + name
	_, err := cs.RbacV1().Roles(in).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(in).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// tlsFiles are a CA and a certificate it signed for 127.0.0.1, for server
// and client auth: what a kubernetes.io/tls Secret with ca.crt holds.
type tlsFiles struct{ ca, cert, key string }

// env points the ready tier configurations at the files.
func (f tlsFiles) env() []string {
	return []string{"TLS_CA_FILE=" + f.ca, "TLS_CERT_FILE=" + f.cert, "TLS_KEY_FILE=" + f.key}
}

// writeTLS makes a CA named name and a certificate for 127.0.0.1 in dir.
func writeTLS(t testing.TB, dir, name string) tlsFiles {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	caKey, leafKey := newKey(), newKey()
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	require.NoError(t, err)
	f := tlsFiles{ca: filepath.Join(dir, name+"-ca.crt"), cert: filepath.Join(dir, name+".crt"), key: filepath.Join(dir, name+".key")}
	for path, block := range map[string]*pem.Block{f.ca: {Type: "CERTIFICATE", Bytes: caDER},
		f.cert: {Type: "CERTIFICATE", Bytes: leafDER}, f.key: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	}
	return f
}

// clientTLS is a TLS client config trusting f's CA, presenting cert's
// certificate (a zero cert: none).
func (f tlsFiles) clientTLS(t testing.TB, cert tlsFiles) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(f.ca)
	require.NoError(t, err)
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert.cert != "" {
		pair, err := tls.LoadX509KeyPair(cert.cert, cert.key)
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// dial is a gRPC connection to addr, plaintext or with tlsCfg.
func dial(t testing.TB, addr string, tlsCfg *tls.Config) *grpc.ClientConn {
	t.Helper()
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// exportAs sends ld over conn with token ("": none).
func exportAs(ctx context.Context, conn *grpc.ClientConn, token string, ld plog.Logs) (plogotlp.ExportResponse, error) {
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
}

// postAs sends ld to addr's /v1/logs as protobuf with token ("": none),
// and answers the HTTP status and, on 200, the response.
func postAs(ctx context.Context, t *testing.T, addr, token string, ld plog.Logs) (int, plogotlp.ExportResponse) {
	t.Helper()
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/logs", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := plogotlp.NewExportResponse()
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, out.UnmarshalProto(raw))
	}
	return resp.StatusCode, out
}

// appendOccurrences appends n records of one occurrence each of reason about
// pod ns/pod: the way the recorder sends them. edit, when given, changes
// each Event before it is encoded (what a hostile app claims).
func appendOccurrences(ld plog.Logs, ns, pod, reason string, n int, edit func(*k8sevent.Event)) plog.Logs {
	for range n {
		ev := k8sevent.Event{Reason: reason, Note: reason + " " + pod, Type: k8sevent.TypeNormal, Time: time.Now(),
			Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: ns, Name: pod, UID: "uid-" + ns + "-" + pod, APIVersion: "v1"}}
		if edit != nil {
			edit(&ev)
		}
		k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	}
	return ld
}

// eventCounts is the occurrences per namespace/pod/reason of the Events
// controller wrote.
func eventCounts(ctx context.Context, t *testing.T, r *authRig, controller string) map[string]int64 {
	t.Helper()
	evs, err := listEvents(ctx, r.srv.Clientset(), byController(controller))
	require.NoError(t, err)
	out := map[string]int64{}
	for i := range evs {
		ev := &evs[i]
		out[ev.Namespace+"/"+ev.InvolvedObject.Name+"/"+ev.Reason] += k8sevent.CoreV1Occurrences(ev)
	}
	return out
}

// tierAccess is what a test running the ready ingestion configurations
// needs to get records in: a token of a ServiceAccount that may create
// Events in every namespace (the storms have many), and, for the tiers,
// TLS files (tier 1 → tier 2 is mutual TLS).
type tierAccess struct {
	tls   tlsFiles
	token string
	tier1 tier1Identity
}

func newTierAccess(t testing.TB, srv *kubetest.Server) tierAccess {
	t.Helper()
	ctx, cs := context.Background(), srv.Clientset()
	const ns, name = "default", "e2e-storm-sender"
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tierAccess{tls: writeTLS(t, t.TempDir(), "tiers"), token: srv.ServiceAccountToken(t, ns, name, time.Hour, authAudience),
		tier1: newTier1Identity(t, srv)}
}

// ingestEnv is the environment of the app-facing configurations
// (otlp-ingestion.yaml, tier 1): TLS files, and a budget a storm replayed
// at full speed by one client fits in.
func (a tierAccess) ingestEnv() []string {
	return slices.Concat(a.tls.env(), a.tier1.env(), []string{"CLIENT_RECORDS_PER_SECOND=100000", "CLIENT_BURST=100000"})
}

// withToken is ctx carrying the token as gRPC metadata (stormsend.OTLP
// sends it).
func (a tierAccess) withToken(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+a.token)
}

// asTier1 is ctx carrying tier 1's token for tier 2, as tier 1 sends it.
func (a tierAccess) asTier1(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+a.tier1.token)
}

// tier1Audience is the audience tier 2 takes tier 1's tokens for (the
// default of tier2-processor.yaml).
const tier1Audience = "otel-k8sevents-tier2"

// tier1Identity is tier 1's ServiceAccount, as tier 2 knows it: its
// username and a token of it for tier 2's audience, in a file as a
// projected volume holds it.
type tier1Identity struct {
	user, token, file string
}

func newTier1Identity(t testing.TB, srv *kubetest.Server) tier1Identity {
	t.Helper()
	const ns, name = "default", "e2e-tier1"
	_, err := srv.Clientset().CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	id := tier1Identity{user: "system:serviceaccount:" + ns + ":" + name,
		token: srv.ServiceAccountToken(t, ns, name, time.Hour, tier1Audience), file: filepath.Join(t.TempDir(), "tier2-token")}
	require.NoError(t, os.WriteFile(id.file, []byte(id.token), 0o600))
	return id
}

// env points the ready tier configurations at tier 1's identity: tier 1
// sends the token, tier 2 takes only its user.
func (id tier1Identity) env() []string {
	return []string{"TIER2_TOKEN_FILE=" + id.file, "TIER1_USER=" + id.user}
}

// tier2Credentials connect to a tier-2 collector as tier 1 does (with
// asTier1's token).
func (a tierAccess) tier2Credentials(t testing.TB) credentials.TransportCredentials {
	return credentials.NewTLS(a.tls.clientTLS(t, a.tls))
}
