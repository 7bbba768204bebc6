package apimodel

// The differential test's normalization: what a server makes up (uids,
// resourceVersions, timestamps, generated names, tokens) replaced by what
// it stands for, so that two servers' answers compare.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// normalizer replaces what a server makes up by what it stands for: the
// n-th uid or resourceVersion a side showed becomes "uid-n" or "rv-n".
type normalizer struct {
	uids, rvs map[string]string
	maxRV     int64 // the highest object resourceVersion seen
}

func newNormalizer() *normalizer {
	return &normalizer{uids: map[string]string{}, rvs: map[string]string{}}
}

func (n *normalizer) token(m map[string]string, prefix, v string) string {
	if v == "" {
		return ""
	}
	if _, ok := m[v]; !ok {
		m[v] = fmt.Sprintf("%s-%d", prefix, len(m)+1)
	}
	return m[v]
}

var generatedName = regexp.MustCompile(`^(.*)[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// generatedIn finds a name generated from the prefix the cases use.
var generatedIn = regexp.MustCompile(`(web-1\.)[bcdfghjklmnpqrstvwxz2456789]{5}\b`)

// object normalizes a decoded object in place (and whatever it holds).
func (n *normalizer) object(t *testing.T, v any, isList bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		if uid, ok := md["uid"].(string); ok {
			md["uid"] = n.token(n.uids, "uid", uid)
		}
		if ct, ok := md["creationTimestamp"].(string); ok && ct != "" {
			md["creationTimestamp"] = "set"
		}
		if rv, ok := md["resourceVersion"].(string); ok {
			num, _ := strconv.ParseInt(rv, 10, 64)
			if isList {
				for _, it := range obj["items"].([]any) {
					irv, _ := strconv.ParseInt(it.(map[string]any)["metadata"].(map[string]any)["resourceVersion"].(string), 10, 64)
					require.GreaterOrEqual(t, num, irv, "a list's resourceVersion is at least its items'")
				}
				md["resourceVersion"] = "list"
			} else {
				n.maxRV = max(n.maxRV, num)
				md["resourceVersion"] = n.token(n.rvs, "rv", rv)
			}
		}
		if c, ok := md["continue"].(string); ok && c != "" {
			md["continue"] = "set"
		}
		if gn, ok := md["generateName"].(string); ok && gn != "" {
			if name, _ := md["name"].(string); generatedName.MatchString(name) && strings.HasPrefix(name, gn) {
				md["name"] = gn + "<generated>"
			}
		}
	}
	if items, ok := obj["items"].([]any); ok {
		for _, it := range items {
			n.object(t, it, false)
		}
	}
	if details, ok := obj["details"].(map[string]any); ok {
		if uid, ok := details["uid"].(string); ok {
			details["uid"] = n.token(n.uids, "uid", uid)
		}
	}
	n.review(obj)
	if obj["kind"] == "SubjectAccessReview" || obj["kind"] == "SelfSubjectAccessReview" {
		// The model names no RBAC binding in its reason.
		if st, ok := obj["status"].(map[string]any); ok {
			delete(st, "reason")
		}
	}
	n.generated(obj)
	if msg, ok := obj["message"].(string); ok {
		obj["message"] = n.inMessage(msg)
	}
}

// current finds the revision a "Too large resource version" quotes.
var current = regexp.MustCompile(`current: [0-9]+`)

// inRecord finds what a precondition's message quotes from the record.
var inRecord = regexp.MustCompile(`\(([0-9a-f-]+)\)`)

// inMessage replaces the uids and resourceVersions a message quotes, in
// parentheses, by their tokens.
func (n *normalizer) inMessage(msg string) string {
	msg = current.ReplaceAllString(msg, "current: <rv>")
	return inRecord.ReplaceAllStringFunc(msg, func(p string) string {
		v := p[1 : len(p)-1]
		if tok, ok := n.uids[v]; ok {
			return "(" + tok + ")"
		}
		if tok, ok := n.rvs[v]; ok {
			return "(" + tok + ")"
		}
		return p
	})
}

// generated replaces the names a server generated (a prefix the test
// asked for and five random characters) in every string of v.
func (n *normalizer) generated(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok {
				v[k] = generatedIn.ReplaceAllString(s, "$1<generated>")
			} else {
				n.generated(x)
			}
		}
	case []any:
		for i, x := range v {
			if s, ok := x.(string); ok {
				v[i] = generatedIn.ReplaceAllString(s, "$1<generated>")
			} else {
				n.generated(x)
			}
		}
	}
}

// review normalizes a TokenReview: its token, the user's uid and
// credential id, the error's text (the model does not copy it).
func (n *normalizer) review(obj map[string]any) {
	if obj["kind"] != "TokenReview" {
		return
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		delete(spec, "token")
	}
	st, _ := obj["status"].(map[string]any)
	if st == nil {
		return
	}
	if e, ok := st["error"].(string); ok && e != "" {
		st["error"] = "set"
	}
	if u, ok := st["user"].(map[string]any); ok {
		if uid, ok := u["uid"].(string); ok {
			u["uid"] = n.token(n.uids, "uid", uid)
		}
		if extra, ok := u["extra"].(map[string]any); ok {
			for k := range extra {
				extra[k] = "set"
			}
		}
	}
}

// frames normalizes watch frames: a bookmark's resourceVersion is checked
// to be at least the events' before it, and a repeated bookmark is
// dropped (the watch cache schedules bookmarks in whole seconds, so the
// one 2 s before a timeout may come twice).
func (n *normalizer) frames(t *testing.T, frames []any) []any {
	var out []any
	lastBookmark := ""
	for _, f := range frames {
		m, _ := f.(map[string]any)
		if m["type"] == "BOOKMARK" {
			md := m["object"].(map[string]any)["metadata"].(map[string]any)
			rv := md["resourceVersion"].(string)
			num, _ := strconv.ParseInt(rv, 10, 64)
			require.GreaterOrEqual(t, num, n.maxRV, "a bookmark's resourceVersion is at least the events' before it")
			md["resourceVersion"] = "bookmark"
			if rv == lastBookmark {
				continue
			}
			lastBookmark = rv
			out = append(out, f)
			continue
		}
		lastBookmark = ""
		n.object(t, m["object"], false)
		out = append(out, f)
	}
	return out
}
