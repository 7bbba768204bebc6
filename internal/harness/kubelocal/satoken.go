package kubelocal

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// serviceAccountKeyFile is the key the API server signs and verifies
// ServiceAccount tokens with (prepareAPIServer writes it).
const serviceAccountKeyFile = "sa.key"

// ResignedToken is token, a ServiceAccount token this API server issued
// (TokenRequest), with its times moved so that it expired at expiredAt and
// signed again with the server's ServiceAccount key: the same claims,
// audience and binding, a valid signature, the token the server would have
// issued expirationSeconds before. TokenRequest refuses lifetimes under
// ten minutes, so a test cannot wait for a real one to expire.
func (c *Cluster) ResignedToken(token string, expiredAt time.Time) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("resign token: not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("resign token: payload: %w", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fmt.Errorf("resign token: claims: %w", err)
	}
	exp, iat := expiredAt.Unix(), expiredAt.Add(-time.Hour).Unix()
	claims["exp"], claims["iat"], claims["nbf"] = exp, iat, iat
	if payload, err = json.Marshal(claims); err != nil {
		return "", err
	}
	keyPEM, err := os.ReadFile(filepath.Join(c.dir, serviceAccountKeyFile))
	if err != nil {
		return "", fmt.Errorf("resign token: %w", err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return "", errors.New("resign token: no PEM key")
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("resign token: key: %w", err)
	}
	signed := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) // the header as issued: alg, kid
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("resign token: sign: %w", err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
