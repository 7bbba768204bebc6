#!/bin/sh
# Builds kube-apiserver and etcd (versions pinned in this directory's go.mod)
# into the given output directory, for the tests in internal/harness/kubetest.
# A binary that already exists in the output directory is not rebuilt.
#
# The two builds run at the same time: each ends in a link that uses one
# core, and etcd's compile overlaps the API server's. Both are linked with
# -s -w (no symbol table, no DWARF): the tests never debug them, and the
# links are shorter and the binaries smaller.
#
# Usage: tools/kube/build.sh OUTDIR
set -eu

if [ "$#" -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

build() {
	name=$1
	pkg=$2
	if [ -x "$out/$name" ]; then
		echo "kube: $out/$name exists, skipping"
		return 0
	fi
	echo "kube: building $out/$name from $pkg (a cold build takes several minutes)"
	# Build to a temporary name so an interrupted build leaves nothing behind
	# that a later run would mistake for a finished binary.
	(cd "$here" && GOWORK=off CGO_ENABLED=0 \
		go build -trimpath -ldflags='-s -w' -o "$out/$name.tmp" "$pkg") || {
		echo "kube: building $name failed" >&2
		rm -f "$out/$name.tmp"
		return 1
	}
	mv -f "$out/$name.tmp" "$out/$name"
}

build etcd go.etcd.io/etcd/server/v3 &
etcd=$!
status=0
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver || status=1
wait "$etcd" || status=1
exit "$status"
