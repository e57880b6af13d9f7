#!/usr/bin/env bash
# hourglass-ctl use-as-system-resolver as a machine sees it: glibc's `getent hosts SHORT`
# (resolv.conf's search domain applied) works before the switch, after it (through hourglassd
# on 127.0.0.1:53) and after --undo, on a plain resolv.conf with search and options and on one
# written by the real openresolv. Everything runs in a user, mount and network namespace
# (unshare -rmn) whose /etc, /lib/resolvconf and /usr/libexec are overlays and /run a tmpfs:
# the machine's own /etc/resolv.conf and /etc/resolvconf.conf are never written (checked).
#
# The servers: "the network's" DNS server is a second hourglassd on 127.0.0.2:53 answering
# intranet.corp.example from a hosts file; the hourglassd under test listens on 127.0.0.1:53
# and forwards to it.
#
# usage: system_resolver_ns_test.sh SOURCE_DIR HOURGLASSD HOURGLASS_CTL
set -euo pipefail
src=$1 hourglassd=$2 ctl=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! unshare -rmn true 2>/dev/null; then
  echo "SKIP: unprivileged user namespaces are not available here"; echo "system resolver ok (skipped)"; exit 0
fi
command -v getent >/dev/null || fail "no getent"
have_openresolv=0
if command -v resolvconf >/dev/null && resolvconf --version 2>/dev/null | grep -q openresolv; then
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
printf '192.0.2.10 intranet.corp.example\n' >"$work/net-hosts"

cat >"$work/ns.sh" <<EOF
set -u
ip link set lo up || exit 99
mount -t overlay overlay -o lowerdir=/etc,upperdir=$work/etc/u,workdir=$work/etc/w /etc || exit 99
if [ -d /lib/resolvconf ]; then
  mount -t overlay overlay -o lowerdir=/lib/resolvconf,upperdir=$work/lib/u,workdir=$work/lib/w /lib/resolvconf || exit 99
fi
mount -t overlay overlay -o lowerdir=/usr/libexec,upperdir=$work/libexec/u,workdir=$work/libexec/w /usr/libexec || exit 99
mount -t tmpfs tmpfs /run || exit 99
mkdir -p /run/resolvconf /run/hourglass /etc/hourglass
export HOURGLASS_CTL=$ctl HOURGLASS_CONTROL=$work/control.sock
: >/etc/hosts
$hourglassd --listen 127.0.0.2:53 --upstream 127.0.0.1:1 --dnssec off --hosts-file $work/net-hosts \
  2>$work/net.log & net=\$!
$hourglassd --listen 127.0.0.1:53 --upstream 127.0.0.2:53 --dnssec off --control $work/control.sock \
  2>$work/daemon.log & own=\$!
i=0; until $ctl stats >/dev/null 2>&1; do i=\$((i+1)); [ \$i -gt 200 ] && exit 98; sleep 0.05; done
short() {  # short LABEL: getent hosts intranet, and what resolv.conf said
  echo "== \$1"
  getent hosts intranet || echo "getent failed"
  sed 's/^/   | /' /etc/resolv.conf
}
asked() { $ctl stats | sed -n 's/^server.queries_udp //p'; }

# --- a plain resolv.conf with search and options ---
printf 'nameserver 127.0.0.2\nsearch corp.example\noptions ndots:1 timeout:1 attempts:2\n' >/etc/resolv.conf
cp /etc/resolv.conf $work/plain.before
short plain-before
q0=\$(asked)
$ctl use-as-system-resolver || echo "switch failed"
short plain-after
echo "asked-hourglassd \$((\$(asked) - q0))"
$ctl use-as-system-resolver --undo || echo "undo failed"
short plain-undone
cmp -s /etc/resolv.conf $work/plain.before && echo "plain-restored-exactly"

# --- a resolv.conf written by openresolv ---
if [ $have_openresolv = 1 ]; then
  printf 'resolv_conf=/etc/resolv.conf\n' >/etc/resolvconf.conf
  cp /etc/resolvconf.conf $work/rcconf.before
  printf 'nameserver 127.0.0.2\nsearch corp.example\noptions timeout:1 attempts:2\n' | resolvconf -a eth0
  cp /etc/resolv.conf $work/or.before
  short openresolv-before
  q0=\$(asked)
  $ctl use-as-system-resolver || echo "switch failed"
  short openresolv-after
  echo "asked-hourglassd \$((\$(asked) - q0))"
  grep -qx 'name_servers=127.0.0.1' /etc/resolvconf.conf && echo "resolvconf.conf-has-name_servers"
  $ctl use-as-system-resolver --undo || echo "undo failed"
  short openresolv-undone
  cmp -s /etc/resolvconf.conf $work/rcconf.before && echo "resolvconf.conf-restored-exactly"
  cmp -s /etc/resolv.conf $work/or.before && echo "openresolv-resolv.conf-restored-exactly"
fi
kill \$own \$net; wait \$own; wait \$net
exit 0
EOF
out=$(unshare -rmn sh "$work/ns.sh" 2>&1) && rc=0 || rc=$?
echo "$out"
((rc != 99)) || fail "mounting in the namespace failed"
((rc != 98)) || { cat "$work/daemon.log"; fail "hourglassd did not start"; }
((rc == 0)) || fail "the namespace script exited $rc"
block() { awk -v b="== $1" '$0 == b {on = 1; next} /^== / {on = 0} on' <<<"$out"; }
for step in plain-before plain-after plain-undone; do
  block "$step" | grep -q '^192\.0\.2\.10 *intranet\.corp\.example$' ||
    fail "$step: getent hosts intranet did not give 192.0.2.10"
done
block plain-after | grep -q '^   | nameserver 127.0.0.1$' || fail "plain-after: resolv.conf does not name 127.0.0.1"
block plain-after | grep -q '^   | search corp.example$' || fail "plain-after: the search line was not kept"
block plain-after | grep -q '^   | options ndots:1 timeout:1 attempts:2$' || fail "plain-after: the options were not kept"
block plain-after | grep -q '127.0.0.2' && fail "plain-after: the old server is still in resolv.conf"
grep -q '^plain-restored-exactly$' <<<"$out" || fail "--undo did not restore the plain file exactly"
[[ $(grep -c '^asked-hourglassd [1-9]' <<<"$out") -ge 1 ]] || fail "getent did not go through hourglassd"
if ((have_openresolv)); then
  for step in openresolv-before openresolv-after openresolv-undone; do
    block "$step" | grep -q '^192\.0\.2\.10 *intranet\.corp\.example$' ||
      fail "$step: getent hosts intranet did not give 192.0.2.10"
  done
  block openresolv-after | grep -q '^   | # Generated by resolvconf$' ||
    fail "openresolv-after: resolv.conf was not written by openresolv"
  block openresolv-after | sed -n 's/^   | nameserver //p' | head -1 | grep -qx '127.0.0.1' ||
    fail "openresolv-after: 127.0.0.1 is not the first nameserver"
  block openresolv-after | grep -qE '^   \| (search|domain) corp.example$' ||
    fail "openresolv-after: the search domain was lost"
  grep -q '^resolvconf.conf-has-name_servers$' <<<"$out" || fail "resolvconf.conf not changed"
  grep -q '^resolvconf.conf-restored-exactly$' <<<"$out" || fail "resolvconf.conf not restored exactly"
  grep -q '^openresolv-resolv.conf-restored-exactly$' <<<"$out" || fail "resolv.conf not as openresolv wrote it before"
  [[ $(grep -c '^asked-hourglassd [1-9]' <<<"$out") -eq 2 ]] || fail "getent did not go through hourglassd (openresolv)"
else
  echo "openresolv is not installed (scripts/install-deps test): its part skipped"
fi
[[ $(md5sum /etc/resolv.conf 2>/dev/null || echo none) == "$resolv_md5" ]] || fail "the machine's /etc/resolv.conf changed"
[[ $(md5sum /etc/resolvconf.conf 2>/dev/null || echo none) == "$rcconf_md5" ]] || fail "the machine's /etc/resolvconf.conf changed"
echo "system resolver ok"
