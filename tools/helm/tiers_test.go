package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// runMirror runs the release's mirror (StatefulSet name in ns) and
// returns once its receiver's watch is open.
func runMirror(ctx context.Context, t *testing.T, srv *kubetest.Server, ns, name string) {
	t.Helper()
	ss, err := srv.Clientset().AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	w := runWorkload(ctx, t, srv, ns, name, ss.Spec.Template)
	require.Eventually(t, func() bool {
		m, err := w.c.Metrics(ctx, w.metrics)
		return err == nil && m.Sum("otelcol_receiver_k8sevents_watches_open") == 1
	}, 2*time.Minute, 200*time.Millisecond, "the mirror's watch is open\n%s", w.c.LogTail(4096))
}

// runTiers runs the release's tier 2 (one pod of its StatefulSet) and tier
// 1 (one of its Deployment), tier 1 routing to that tier-2 pod over mutual
// TLS with a certificate made here for 127.0.0.1 (the Secret's files, as
// the pods mount them). It returns tier 1's OTLP/HTTP address.
func runTiers(ctx context.Context, t *testing.T, srv *kubetest.Server, ns, tier1, tier2 string) string {
	t.Helper()
	cs := srv.Clientset()
	tls := writeTLS(t)
	ss, err := cs.AppsV1().StatefulSets(ns).Get(ctx, tier2, metav1.GetOptions{})
	require.NoError(t, err)
	grpc2 := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	runWorkload(ctx, t, srv, ns, tier2, ss.Spec.Template, append(tls, "OTLP_GRPC_ENDPOINT="+grpc2)...)
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, tier1, metav1.GetOptions{})
	require.NoError(t, err)
	http1 := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	runWorkload(ctx, t, srv, ns, tier1, d.Spec.Template, append(tls, "TIER2_ENDPOINTS=["+grpc2+"]",
		fmt.Sprintf("OTLP_GRPC_ENDPOINT=127.0.0.1:%d", freePort(t)), "OTLP_HTTP_ENDPOINT="+http1,
		"TIER2_TOKEN_FILE="+projectedToken(t, srv, ns, tier1, d.Spec.Template.Spec))...)
	return http1
}

// projectedToken writes the token the kubelet would project into pod for
// its ServiceAccount (ns/name): the audience the pod's volume asks for.
func projectedToken(t *testing.T, srv *kubetest.Server, ns, name string, pod corev1.PodSpec) string {
	t.Helper()
	var audience string
	for _, v := range pod.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				audience = src.ServiceAccountToken.Audience
			}
		}
	}
	require.NotEmpty(t, audience, "%s projects a token for tier 2", name)
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(srv.ServiceAccountToken(t, ns, name, time.Hour, audience)), 0o600))
	return file
}

// writeTLS writes a CA and one certificate of it for 127.0.0.1, for
// server and client auth, as the tiers' Secret holds them, and returns the
// environment that points the tiers' configurations at them.
func writeTLS(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	caKey, leafKey := key(), key()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "otel-k8sevents-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "otelcol-tier"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &leafKey.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	require.NoError(t, err)
	files := map[string]*pem.Block{"ca.crt": {Type: "CERTIFICATE", Bytes: caDER}, "tls.crt": {Type: "CERTIFICATE", Bytes: leafDER},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER}}
	for name, block := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600))
	}
	return []string{"TLS_CA_FILE=" + filepath.Join(dir, "ca.crt"), "TLS_CERT_FILE=" + filepath.Join(dir, "tls.crt"),
		"TLS_KEY_FILE=" + filepath.Join(dir, "tls.key")}
}
