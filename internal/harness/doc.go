// Package harness holds, in its sub-packages, everything that drives the
// project in tests, end-to-end tests and the demo: real kube-apiservers on
// loopback, the built collector as a child process, fault proxies, recorded
// storms and client-go's recorders as models. None of it is in the
// collector binary: the components import only internal/k8sevent,
// internal/k8sclient, internal/ratelog, internal/ctxwait and
// internal/retry (TestShippedCodeImportsNoHarness).
package harness
