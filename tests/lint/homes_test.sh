#!/usr/bin/env bash
# tools/lint/homes fails on each kind of planted copy (naming FILE:LINE and the home to use),
# passes on a tree that keeps every helper in its home, and passes on this repository.
#
#   homes_test.sh SOURCE_DIR
set -euo pipefail
src=$1
lint=$src/tools/lint/homes
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A tree whose homes hold what they are the home of.
clean_tree() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree/base" "$work/tree/wire" "$work/tree/cache" "$work/tree/resolver" \
    "$work/tree/tests"
  cp "$src/base/hash.h" "$src/base/bytes.h" "$src/base/wall_clock.h" "$work/tree/base/"
  cp "$src/wire/header.h" "$src/wire/header.cc" "$work/tree/wire/"
  cp "$src/cache/key.h" "$work/tree/cache/"
  printf '#include "base/hash.h"\nuint64_t h = hg::base::fnv1a(b);\n' >"$work/tree/resolver/ok.cc"
  # Tests may read the wall clock (a certificate's validity, an expected timestamp).
  printf 'auto t = std::chrono::system_clock::now();\n' >"$work/tree/tests/clock_test.cc"
  # Build directories are not sources.
  mkdir -p "$work/tree/build/x"
  printf 'h *= 1099511628211ull;\n' >"$work/tree/build/x/copy.cc"
}

clean_tree
"$lint" "$work/tree" >"$work/out" 2>&1 || { cat "$work/out"; fail "the clean tree fails"; }
echo "ok: a clean tree passes"

# plant FILE LINE HOME: one offending line in an otherwise clean tree must fail, naming the
# file, its line and the home.
plant() {
  clean_tree
  mkdir -p "$(dirname "$work/tree/$1")"
  printf '// a copy\n%s\n' "$2" >"$work/tree/$1"
  if "$lint" "$work/tree" >"$work/out" 2>&1; then
    cat "$work/out"
    fail "$1 with '$2' passed"
  fi
  grep -qF "$1:2:" "$work/out" || { cat "$work/out"; fail "no $1:2 in the report"; }
  grep -qF "$3" "$work/out" || { cat "$work/out"; fail "the report does not name $3"; }
  echo "ok: '$2' in $1 fails, pointing at $3"
}

plant resolver/net/fnv.cc '  uint64_t h = 14695981039346656037ull;' base/hash.h
plant tools/x/fnv.cc '    h *= 1099511628211ULL;' base/hash.h
plant tests/support/fnv32.cc 'uint32_t h = 0x811c9dc5;' base/hash.h
plant wire/edns.cc '  auto code = static_cast<uint16_t>((data[0] << 8) | data[1]);' base/bytes.h
plant dnssec/x.cc '  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | p[2];' base/bytes.h
plant resolver/upstream/x.cc 'uint16_t get16(const uint8_t* p) {' base/bytes.h
plant resolver/query/x.cc '  h.flags = (req.flags & 0x7800);' wire/header.h
plant tools/rehearse/x.cc '  auto op = (flags >> 11) & 0xF;' wire/header.h
plant tools/rehearse/x.cc 'std::size_t question_end(std::span<const uint8_t> m) {' wire/header.h
plant resolver/fleet/x.h '  std::size_t operator()(const cache::CacheKey& k) const noexcept {' cache/key.h
plant resolver/ops/x.cc '  const auto wall = std::chrono::system_clock::now();' base/wall_clock.h

"$lint" "$src" >"$work/out" 2>&1 || { cat "$work/out"; fail "this repository fails"; }
echo "ok: this repository passes ($(tail -n1 "$work/out"))"
