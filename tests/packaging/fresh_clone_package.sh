#!/usr/bin/env bash
# The README's first install command, as a new user runs it: a fresh clone of the commit under
# test (not the working tree, not a build folder of it), `./scripts/package` in it, and
# lintian over the .deb it makes (no errors). Catches what only a fresh clone shows: a tracked
# link into a build folder, a generated file that is not committed, a missing install step.
# Packaging needs only the build group (scripts/install-deps build): what else it used would
# be missing on a machine that has only that, and scripts/package installs nothing more.
#
# usage: tests/packaging/fresh_clone_package.sh [SOURCE_DIR]   (run by scripts/run-tests)
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/hourglass-clone.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "fresh-clone package: FAILED: $*" >&2; exit 1; }

commit=$(git -C "$src" rev-parse --short HEAD)
git clone -q --no-hardlinks "$src" "$work/hourglass"
git -C "$work/hourglass" checkout -q --detach "$commit"
start=$SECONDS
(cd "$work/hourglass" && ./scripts/package --out "$work") >"$work/package.log" 2>&1 ||
  { tail -40 "$work/package.log"; fail "./scripts/package in a fresh clone of $commit"; }
deb=$(ls "$work"/hourglass_*_amd64.deb 2>/dev/null) || fail "no .deb was written"
echo "fresh clone of $commit: $(basename "$deb") ($(stat -c %s "$deb") bytes) in $((SECONDS - start)) s"
# Nothing outside the clone's own, ignored, folders was written, and the clone is clean.
[[ -z $(git -C "$work/hourglass" status --porcelain) ]] ||
  { git -C "$work/hourglass" status --short; fail "scripts/package left files git does not ignore"; }
lintian --fail-on error --tag-display-limit 0 "$deb" >"$work/lintian" 2>&1 ||
  { cat "$work/lintian"; fail "lintian reports errors"; }
echo "lintian: $(grep -c '^E:' "$work/lintian" || true) errors, $(grep -c '^W:' "$work/lintian" || true) warnings"
echo "fresh-clone package ok"
