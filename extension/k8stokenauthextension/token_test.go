package k8stokenauthextension

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBearerTokenFromGRPCAndHTTPSources(t *testing.T) {
	for name, tc := range map[string]struct {
		sources map[string][]string
		token   string
		ok      bool
	}{
		"grpc metadata":          {map[string][]string{"authorization": {"Bearer abc"}}, "abc", true},
		"http header":            {map[string][]string{"Authorization": {"Bearer abc"}}, "abc", true},
		"scheme in any case":     {map[string][]string{"authorization": {"bEaReR abc"}}, "abc", true},
		"spaces around":          {map[string][]string{"authorization": {"  Bearer   abc  "}}, "abc", true},
		"second value":           {map[string][]string{"authorization": {"Basic x", "Bearer abc"}}, "abc", true},
		"none":                   {map[string][]string{"x-other": {"Bearer abc"}}, "", false},
		"basic only":             {map[string][]string{"authorization": {"Basic dXNlcjpwdw=="}}, "", false},
		"bearer without one":     {map[string][]string{"authorization": {"Bearer "}}, "", false},
		"token without a scheme": {map[string][]string{"authorization": {"abc"}}, "", false},
	} {
		t.Run(name, func(t *testing.T) {
			token, ok := bearerToken(tc.sources)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.token, token)
		})
	}
}

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("sig"))
}

// TestAllowedNoLongerThanTheTokenLives: an accepted token is believed for
// allow_ttl, never past its exp; a token that is no JWT, or has no exp,
// for allow_ttl.
func TestAllowedNoLongerThanTheTokenLives(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	limit := 2 * time.Minute
	for name, tc := range map[string]struct {
		token string
		want  time.Duration
	}{
		"expires in an hour": {jwt(`{"exp":1700003600}`), limit},
		"expires in 30s":     {jwt(`{"exp":1700000030}`), 30 * time.Second},
		"expired":            {jwt(`{"exp":1699999990}`), 0},
		"exp as a float":     {jwt(`{"exp":1700000045.0}`), 45 * time.Second},
		"no exp":             {jwt(`{"sub":"x"}`), limit},
		"not a JWT":          {"static-token", limit},
		"payload not base64": {"a.!!!.c", limit},
		"payload not JSON":   {"a." + base64.RawURLEncoding.EncodeToString([]byte("nope")) + ".c", limit},
		"exp not a number":   {jwt(`{"exp":"soon"}`), limit},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, allowFor(tc.token, now, limit))
		})
	}
}

// TestFreshTokenFromAServerAheadIsChecked: a token minted by an API server
// whose clock runs up to a minute ahead of this node's (nbf after now) is
// not refused locally; one not valid for longer is.
func TestFreshTokenFromAServerAheadIsChecked(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	token := func(nbf time.Duration) string {
		return jwt(fmt.Sprintf(`{"aud":["a"],"exp":%d,"nbf":%d}`, now.Add(time.Hour).Unix(), now.Add(nbf).Unix()))
	}
	assert.NoError(t, checkLocally(token(0), []string{"a"}, nil, now))
	assert.NoError(t, checkLocally(token(30*time.Second), []string{"a"}, nil, now), "a server 30 s ahead")
	assert.ErrorContains(t, checkLocally(token(2*time.Minute), []string{"a"}, nil, now), "not valid yet")
}
