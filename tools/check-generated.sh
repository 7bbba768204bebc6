#!/bin/sh
# Checks that mdatagen's output (each component's internal/metadata,
# internal/metadatatest, generated_*_test.go and documentation.md) is what
# `make generate` makes from its metadata.yaml. `make lint` runs it.
#
# It regenerates in a temporary copy of the working tree (tracked and
# untracked files, not ignored ones), never in the tree itself: a developer's
# uncommitted work, a hand edit to a generated file included, is left as it
# is, and the check is of the files as they are now, not as committed.
#
# Usage: tools/check-generated.sh   (from anywhere in the checkout; GO names the go command)
set -eu

go=${GO:-go}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-generated.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# The copy: every file git would see, as it is on disk (a tracked file deleted
# in the working tree is left out, as it is in the tree).
cd "$root"
git ls-files -z --cached --others --exclude-standard --deduplicate |
	xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh |
	tar -cf - --null -T - | (mkdir "$tmp/tree" && tar -xf - -C "$tmp/tree")

# A throwaway repository over the copy, so that git names what mdatagen
# changes: modified, new and removed files alike.
cd "$tmp/tree"
git init -q .
git add -A
git -c user.name=check -c user.email=check@localhost -c commit.gpgsign=false commit -q --no-verify -m copy
if ! out=$("$go" generate ./... 2>&1); then
	echo "check-generated: make generate failed in a copy of the tree:" >&2
	echo "$out" >&2
	exit 1
fi
git add -A
if ! git diff --cached --quiet; then
	echo "check-generated: these generated files do not match their metadata.yaml" >&2
	echo "(M: differs, A: missing from the tree, D: in the tree but mdatagen no longer makes it):" >&2
	git diff --cached --name-status | sed 's/^/  /' >&2
	echo "Run 'make generate' and commit the result; do not edit mdatagen's output by hand" >&2
	echo "(change metadata.yaml instead). The difference (- as in the tree, + as generated):" >&2
	git diff --cached --stat=200 >&2
	git diff --cached | head -n 200 >&2
	exit 1
fi
echo "check-generated: mdatagen's output matches every metadata.yaml"
