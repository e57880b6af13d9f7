# shellcheck shell=bash disable=SC2034,SC2154
# (Sourced, not run: src comes from the sourcing script, which reads the variables set here.)
# Shared set-up of the namespace tests (system_resolver_ns_test.sh, links_vpn_ns_test.sh):
# sourced after `src` is set. ns_prepare OK_LINE: when user namespaces are unavailable, says
# SKIP and OK_LINE and exits 0; otherwise sets have_openresolv, makes $work (removed at exit),
# records the checksums of the machine's resolv.conf and resolvconf.conf (the tests check they
# are left alone), and lays out the overlay directories with the packaged hooks in them.
fail() { echo "FAIL: $*" >&2; exit 1; }
ns_prepare() {
  if ! unshare -rmn true 2>/dev/null; then
    echo "SKIP: unprivileged user namespaces are not available here"; echo "$1 (skipped)"; exit 0
  fi
  have_openresolv=0
  if command -v resolvconf >/dev/null && [[ $(resolvconf --version 2>/dev/null) == openresolv* ]]; then
    have_openresolv=1
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  resolv_md5=$(md5sum /etc/resolv.conf 2>/dev/null || echo none)
  rcconf_md5=$(md5sum /etc/resolvconf.conf 2>/dev/null || echo none)
  mkdir -p "$work"/{etc,lib,libexec}/{u,w} "$work/libexec/u/hourglass" "$work/lib/u"
  cp "$src/packaging/hooks/hook" "$work/libexec/u/hourglass/hook"
  cp "$src/packaging/hooks/openresolv-subscriber" "$work/lib/u/hourglass"
  chmod 755 "$work/libexec/u/hourglass/hook" "$work/lib/u/hourglass"
}
