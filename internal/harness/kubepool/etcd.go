package kubepool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// etcd speaks to etcd's JSON gateway (/v3/kv/...), which needs no client
// library. Its connections are not kept: a test process keeps no goroutine
// for them.
type etcd struct {
	url    string
	client *http.Client
}

func newEtcd(url string) *etcd {
	// No timeout of its own: the caller's context bounds each call.
	return &etcd{url: url, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}

// keyValue is the part of etcd's mvccpb.KeyValue used here. The gateway
// writes int64s as strings, bytes in base64 (as encoding/json does), and
// leaves out zero values.
type keyValue struct {
	Key            []byte `json:"key"`
	CreateRevision int64  `json:"create_revision,string"`
}

type rangeRequest struct {
	Key               []byte `json:"key"`
	RangeEnd          []byte `json:"range_end,omitempty"`
	KeysOnly          bool   `json:"keys_only,omitempty"`
	CountOnly         bool   `json:"count_only,omitempty"`
	MinCreateRevision int64  `json:"min_create_revision,omitempty,string"`
	MaxCreateRevision int64  `json:"max_create_revision,omitempty,string"`
}

type rangeResponse struct {
	Header struct {
		Revision int64 `json:"revision,string"`
	} `json:"header"`
	KVs   []keyValue `json:"kvs"`
	Count int64      `json:"count,string"`
}

// registry is where kube-apiserver keeps its objects.
const registry = "/registry/"

// serverOwnKeys are records kube-apiserver keeps of itself and renews (its
// endpoint and identity leases, etcd leases with a TTL): a reset leaves them.
var serverOwnKeys = []string{registry + "masterleases/", registry + "peerserverleases/"}

// prefixEnd is the end of the range of keys that start with prefix.
func prefixEnd(prefix string) []byte {
	end := []byte(prefix)
	end[len(end)-1]++
	return end
}

func (e *etcd) call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := e.client.Do(r)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s", path, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(resp); err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	return nil
}

// revision is etcd's current revision.
func (e *etcd) revision(ctx context.Context) (int64, error) {
	var resp rangeResponse
	err := e.call(ctx, "/v3/kv/range", rangeRequest{Key: []byte(registry), RangeEnd: prefixEnd(registry), CountOnly: true}, &resp)
	return resp.Header.Revision, err
}

// deleteCreatedAfter deletes every object kube-apiserver stored after
// revision. Keys are grouped by their parent (a resource, or a resource
// in one namespace): a parent that held nothing at revision goes in one
// request, others key by key.
func (e *etcd) deleteCreatedAfter(ctx context.Context, revision int64) error {
	var created rangeResponse
	if err := e.call(ctx, "/v3/kv/range", rangeRequest{Key: []byte(registry), RangeEnd: prefixEnd(registry),
		KeysOnly: true, MinCreateRevision: revision + 1}, &created); err != nil {
		return err
	}
	byParent := map[string][]string{}
	for _, kv := range created.KVs {
		key := string(kv.Key)
		if slices.ContainsFunc(serverOwnKeys, func(own string) bool { return strings.HasPrefix(key, own) }) {
			continue
		}
		parent := key[:strings.LastIndex(key, "/")+1]
		byParent[parent] = append(byParent[parent], key)
	}
	for parent, keys := range byParent {
		var older rangeResponse
		if err := e.call(ctx, "/v3/kv/range", rangeRequest{Key: []byte(parent), RangeEnd: prefixEnd(parent),
			CountOnly: true, MaxCreateRevision: revision}, &older); err != nil {
			return err
		}
		if older.Count == 0 {
			keys = []string{parent}
		}
		for _, key := range keys {
			req := rangeRequest{Key: []byte(key)}
			if key == parent {
				req.RangeEnd = prefixEnd(parent)
			}
			var ignored struct{}
			if err := e.call(ctx, "/v3/kv/deleterange", req, &ignored); err != nil {
				return err
			}
		}
	}
	return nil
}
