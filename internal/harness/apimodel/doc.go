// Package apimodel is an in-process model of kube-apiserver for tests: the
// part of its API the project's components use, served from memory behind
// an http.RoundTripper (no socket), so that client-go's own behaviour (rate
// limiter, Retry-After retries, watch decoding) runs for real against it. It
// is test support (internal/harness) and never reaches the collector
// binary.
//
// It serves, with the real server's answers (status, reason, causes and
// messages), as the differential test in this package checks against a real
// kube-apiserver:
//
//   - Events in core/v1 and events.k8s.io/v1 from one storage, with the
//     conversions between them; create (validation of each API as the
//     server validates it, generateName, 409 AlreadyExists, 404 for a
//     missing namespace), get, list (field selectors each API supports,
//     label selectors, limit and continue, the list's resourceVersion),
//     watch (from a resourceVersion, or the current objects first; ADDED,
//     MODIFIED and DELETED in order; 410 Expired for a compacted
//     resourceVersion, and in the stream of a watch whose reader fell
//     behind a compaction (etcd cancels a watcher behind the compacted
//     revision; the server's buffers, which a real watch has, are not
//     modelled); timeoutSeconds; the initial-events-end bookmark of
//     sendInitialEvents; periodic bookmarks only with EventsWatchCache, as
//     kube-apiserver never watch-caches Events by default), update with a
//     resourceVersion precondition, strategic merge, JSON merge and JSON
//     patches (the server's own libraries), and delete with preconditions;
//     the Event TTL and etcd compaction (Compact, CompactionInterval) on the
//     model's clock.
//   - Namespaces (get, list, create), coordination.k8s.io/v1 Leases (what
//     leader election needs: get, create, update with conflicts).
//   - TokenReview (static and service account tokens, audiences, expiry)
//     and SubjectAccessReview (the Allow rules).
//   - Bearer token authentication (401; anonymous without a token), RBAC
//     authorization by Allow rules (403 with the server's message), a
//     server that is starting (SetReady), discovery, /version, /readyz,
//     /healthz.
//   - Faults (NewFaultTransport): error answers, timeouts before or after
//     the request is applied, connection resets.
//
// One revision counter orders every write, as etcd's does. The Server
// starts no goroutine: a request is answered in the caller's goroutine and a
// watch by the goroutine that reads its body, which waits on channels and
// timers only. So inside a testing/synctest bubble a watching goroutine is
// durably blocked, virtual time advances, and nothing outlives a cancelled
// request.
//
// Not modelled: managedFields and server-side apply (415), answers in
// protobuf or CBOR (protobuf request bodies, which typed clients send, are
// read; answers are JSON, which client-go accepts), dry run, fieldValidation=Strict (unknown fields are dropped), warnings,
// admission plugins but NamespaceLifecycle (no EventRateLimit: use a
// Fault), priority and fairness (use a Fault), deletecollection, namespace
// termination (DeleteNamespace removes everything at once), namespace
// updates, other resources, RBAC roles, bindings and groups (Allow rules
// name users), the SubjectAccessReview's reason, the TokenReview's exact
// error text, impersonation, a watch cache's own window (even with
// EventsWatchCache, a watch from any revision since the last compaction is
// served), etcd progress notifications, the random spread of watch
// timeouts and the etcd lease granularity of the TTL (both exact here),
// the compactor's own revision on each periodic compaction, and the wait
// of a list (or a watch cache) for a resourceVersion the server has not
// reached (504 at once; a watch of Events waits for it, as etcd's does).
package apimodel
