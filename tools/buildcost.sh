#!/usr/bin/env bash
# buildcost.sh: what building the distribution costs, for make bench: the
# packages it links, the binary's size, and the CPU time (user + sys) of a
# build with an empty Go build cache and of the same build again with that
# cache warm. Wall time follows the machine's load; CPU time much less.
# Run from the repository root after make otelcol (ocb's sources in
# otelcol-k8sevents/, the binary in bin/).
set -euo pipefail
src=otelcol-k8sevents
bin=bin/otelcol-k8sevents
cache=$(mktemp -d)
trap 'chmod -R u+w "$cache"; rm -rf "$cache"' EXIT
cd "$src"
echo "packages linked: $(go list -deps . | wc -l)"
echo "binary: $(($(stat -c %s "../$bin") / 1048576)) MiB ($bin)"
TIMEFORMAT='%U s user + %S s sys CPU, %R s wall'
echo "build with an empty build cache (modules already downloaded):"
time GOCACHE="$cache/go" go build -o "$cache/otelcol" .
echo "the same build again, cache warm:"
time GOCACHE="$cache/go" go build -o "$cache/otelcol" .
