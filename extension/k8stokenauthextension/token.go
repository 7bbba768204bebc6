package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// maxTokenBytes: a ServiceAccount token is about 1 KB (a few with a long
// pod name and extra claims); anything longer is no token of one.
const maxTokenBytes = 16 << 10

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

// claims are what is read of a JWT's payload before anyone is asked.
type claims struct {
	Issuer   string        `json:"iss"`
	Audience audienceClaim `json:"aud"`
	Exp      *json.Number  `json:"exp"`
	Nbf      *json.Number  `json:"nbf"`
}

// audienceClaim is a JWT's aud: one string or a list (RFC 7519).
type audienceClaim []string

func (a *audienceClaim) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audienceClaim{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud is neither a string nor a list of strings")
	}
	*a = many
	return nil
}

// parseClaims reads a JWT's claims without checking its signature: false
// when token is no JWT (three base64url parts, a JSON payload).
func parseClaims(token string) (claims, bool) {
	var c claims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return c, false
	}
	return c, json.Unmarshal(payload, &c) == nil
}

// unixTime reads a NumericDate (seconds, an integer or not).
func unixTime(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	sec, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil {
			return time.Time{}, false
		}
		sec = int64(f)
	}
	return time.Unix(sec, 0), true
}

// checkLocally refuses, without asking the API server, a token that
// cannot be one it would accept for these audiences and issuers (none:
// any issuer) at now: too long, no JWT, none of the audiences, expired or
// not yet valid, or another issuer. The signature is not checked: a
// token that passes is still reviewed; this only keeps a flood of
// random values from costing TokenReviews.
// notBeforeLeeway is how far this node's clock may lag the API server's:
// a token is minted with nbf at the server's now and used at once, and
// refusing it for a second's skew would refuse every fresh token (the
// server's own validation allows the same).
const notBeforeLeeway = time.Minute

func checkLocally(token string, audiences, issuers []string, now time.Time) error {
	if len(token) > maxTokenBytes {
		return fmt.Errorf("longer than %d bytes", maxTokenBytes)
	}
	c, ok := parseClaims(token)
	if !ok {
		return errors.New("not a JWT")
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(audiences, a) }) {
		return errors.New("not issued for this collector's audience")
	}
	exp, ok := unixTime(c.Exp)
	if !ok || !now.Before(exp) {
		return errors.New("expired, or no exp")
	}
	if nbf, ok := unixTime(c.Nbf); ok && now.Add(notBeforeLeeway).Before(nbf) {
		return errors.New("not valid yet")
	}
	if len(issuers) > 0 && !slices.Contains(issuers, c.Issuer) {
		return errors.New("another issuer's")
	}
	return nil
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
	c, ok := parseClaims(token)
	if !ok {
		return time.Time{}, false
	}
	return unixTime(c.Exp)
}
