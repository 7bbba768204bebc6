package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// bearerToken finds "authorization: Bearer <token>" among a request's
// sources: gRPC metadata (keys in lower case) or HTTP headers (canonical
// case), the scheme in any case (RFC 7235). false: none, or not Bearer.
func bearerToken(sources map[string][]string) (string, bool) {
	for k, vs := range sources {
		if !strings.EqualFold(k, "authorization") {
			continue
		}
		for _, v := range vs {
			scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
			if ok && strings.EqualFold(scheme, "bearer") {
				if token = strings.TrimSpace(token); token != "" {
					return token, true
				}
			}
		}
	}
	return "", false
}

// allowFor is how long an accepted token is believed: limit, and never
// past the exp claim of a token that is a JWT (a ServiceAccount token
// is). The claim is read without checking the signature: the API server
// has just accepted these very bytes. 0: the token expires now, or is
// about to.
func allowFor(token string, now time.Time, limit time.Duration) time.Duration {
	exp, ok := expiry(token)
	if !ok {
		return limit
	}
	return max(min(exp.Sub(now), limit), 0)
}

// expiry reads a JWT's exp claim; false when the token is no JWT or has
// none.
func expiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	sec, err := claims.Exp.Int64()
	if err != nil {
		f, ferr := claims.Exp.Float64()
		if ferr != nil {
			return time.Time{}, false
		}
		sec = int64(f)
	}
	return time.Unix(sec, 0), true
}
