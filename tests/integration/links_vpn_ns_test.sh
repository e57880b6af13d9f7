#!/usr/bin/env bash
# A VPN comes up and goes down while names are being asked: corp names go to the VPN's server
# within 1 s of up and back to the default within 1 s of down, and no query is lost meanwhile.
# Three ways a VPN tells hourglassd: through the real openresolv (resolvconf -a tun0 /
# resolvconf -d tun0, its hourglass subscriber), an OpenVPN up/down script run with OpenVPN's
# environment, and hourglass-ctl link / --revert directly. With openresolv, glibc's
# `getent hosts intranet` also uses the VPN's search domain while it is up.
#
# Everything runs in a user, mount and network namespace (unshare -rmn) whose /etc,
# /lib/resolvconf and /usr/libexec are overlays and /run a tmpfs; the machine's own files are
# never written (checked). The servers are hourglassd instances answering from hosts files:
# the default one (the configured upstream) on 127.0.0.2:53 says n1..n3000.corp.example are
# 192.0.2.10, the VPN's on 127.0.0.9:53 says they are 192.0.2.99. Every query asks a name not
# asked before, so no answer comes from the cache.
#
# usage: links_vpn_ns_test.sh SOURCE_DIR HOURGLASSD HOURGLASS_CTL
set -euo pipefail
src=$1 hourglassd=$2 ctl=$3
# shellcheck source=tests/integration/ns_kit.sh
source "$(dirname "$0")/ns_kit.sh"
ns_prepare "vpn links ok"
command -v dig >/dev/null || fail "no dig (scripts/install-deps test)"
for ((i = 1; i <= 3000; i++)); do echo "192.0.2.10 n$i.corp.example"; done >"$work/default-hosts"
{ for ((i = 1; i <= 3000; i++)); do echo "192.0.2.99 n$i.corp.example"; done
  echo "192.0.2.99 intranet.corp.example"; echo "192.0.2.99 after-sync.corp.example"; } >"$work/vpn-hosts"

cat >"$work/asker.py" <<'EOF'
import os, socket, struct, sys, time
log, stop = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
with open(log, "a", buffering=1) as out:
    for n in range(1, 3001):
        if os.path.exists(stop):
            break
        qid = n & 0xFFFF
        q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
        for label in (f"n{n}", "corp", "example"):
            q += bytes([len(label)]) + label.encode()
        q += b"\0" + struct.pack(">HH", 1, 1)
        sent = time.time_ns()
        s.sendto(q, ("127.0.0.1", 53))
        answer = "LOST"
        try:
            while True:
                r = s.recv(4096)
                if len(r) >= 12 and struct.unpack(">H", r[:2])[0] == qid:
                    break
            rcode = r[3] & 0x0F
            ancount = struct.unpack(">H", r[6:8])[0]
            answer = f"rcode{rcode}"
            if rcode == 0 and ancount > 0 and r[-6:-4] == b"\0\4":
                answer = ".".join(str(b) for b in r[-4:])
        except socket.timeout:
            pass
        out.write(f"{sent} {n} {answer}\n")
        time.sleep(0.02)
EOF

cat >"$work/ns.sh" <<EOF
set -u
ip link set lo up || exit 99
mount -t overlay overlay -o lowerdir=/etc,upperdir=$work/etc/u,workdir=$work/etc/w /etc || exit 99
if [ -d /lib/resolvconf ]; then
  mount -t overlay overlay -o lowerdir=/lib/resolvconf,upperdir=$work/lib/u,workdir=$work/lib/w /lib/resolvconf || exit 99
fi
mount -t overlay overlay -o lowerdir=/usr/libexec,upperdir=$work/libexec/u,workdir=$work/libexec/w /usr/libexec || exit 99
mount -t tmpfs tmpfs /run || exit 99
mkdir -p /run/resolvconf /run/hourglass
export HOURGLASS_CTL=$ctl HOURGLASS_CONTROL=$work/control.sock
: >/etc/hosts
printf 'resolv_conf=/etc/resolv.conf\nname_servers=127.0.0.1\n' >/etc/resolvconf.conf
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:2\n' >/etc/resolv.conf
$hourglassd --allow-root --listen 127.0.0.2:53 --upstream 127.0.0.1:1 --dnssec off --hosts-file $work/default-hosts \
  2>$work/default.log & def=\$!
$hourglassd --allow-root --listen 127.0.0.9:53 --upstream 127.0.0.1:1 --dnssec off --hosts-file $work/vpn-hosts \
  2>$work/vpn.log & vpn=\$!
$hourglassd --allow-root --listen 127.0.0.1:53 --upstream 127.0.0.2:53 --dnssec off --control $work/control.sock \
  2>$work/daemon.log & own=\$!
i=0; until $ctl stats >/dev/null 2>&1 && dig @127.0.0.9 +short +tries=1 +time=1 n1.corp.example | grep -q 99 &&
           dig @127.0.0.2 +short +tries=1 +time=1 n1.corp.example | grep -q 10; do
  i=\$((i+1)); [ \$i -gt 200 ] && exit 98; sleep 0.05
done
now() { date +%s%N; }
# The asker: one new name every 20 ms, one at a time (2 s to answer), each line
# "SENT_NS N ANSWER" (LOST when none came).
python3 $work/asker.py $work/asked $work/stop & asker=\$!
# wait_answer SINCE_NS ADDR: polls (5 s at most) for a query sent after SINCE_NS answered ADDR;
# prints its send time.
wait_answer() {
  j=0
  while [ \$j -lt 500 ]; do
    s=\$(awk -v t="\$1" -v a="\$2" '\$1 >= t && \$3 == a {print \$1; exit}' $work/asked 2>/dev/null)
    [ -n "\$s" ] && { echo "\$s"; return 0; }
    j=\$((j+1)); sleep 0.01
  done
  echo never
}
# phase NAME UP DOWN: the default first, then UP (VPN answers), then DOWN (default again).
phase() {
  wait_answer \$(now) 192.0.2.10 >/dev/null
  t0=\$(now); eval "\$2"; t1=\$(now)
  s=\$(wait_answer \$t0 192.0.2.99)
  echo "\$1 up: command \$(( (t1 - t0) / 1000000 )) ms, first VPN answer sent \$( [ "\$s" = never ] && echo never || echo \$(( (s - t0) / 1000000 )) ) ms after up"
  echo "\$1 up-window \$t1"
  if [ "\$1" = openresolv ]; then echo "== getent"; getent hosts intranet || echo "getent failed"; echo "== end"; fi
  wait_answer \$(now) 192.0.2.99 >/dev/null
  t2=\$(now); eval "\$3"; t3=\$(now)
  s=\$(wait_answer \$t2 192.0.2.10)
  echo "\$1 down: command \$(( (t3 - t2) / 1000000 )) ms, first default answer sent \$( [ "\$s" = never ] && echo never || echo \$(( (s - t2) / 1000000 )) ) ms after down"
  echo "\$1 down-window \$t1 \$t2 \$t3"
}
if [ $have_openresolv = 1 ]; then
  phase openresolv "printf 'nameserver 127.0.0.9\nsearch corp.example\n' | resolvconf -a tun0" "resolvconf -d tun0"
fi
phase openvpn "env script_type=up dev=tun1 foreign_option_1='dhcp-option DNS 127.0.0.9' foreign_option_2='dhcp-option DOMAIN corp.example' /usr/libexec/hourglass/hook openvpn" \
  "env script_type=down dev=tun1 /usr/libexec/hourglass/hook openvpn"
phase ctl "$ctl link tun2 --dns 127.0.0.9 --domain ~corp.example --default-route no >/dev/null" "$ctl link tun2 --revert >/dev/null"
touch $work/stop; wait \$asker
echo "links-at-end: \$($ctl links | tr '\n' ' ')"
# A restarted hourglassd has no links: the unit's ExecStartPost (hook sync) gives openresolv's back.
if [ $have_openresolv = 1 ]; then
  printf 'nameserver 127.0.0.9\nsearch corp.example\n' | resolvconf -a tun0
  echo "before-restart: \$($ctl links | tr '\n' ' ')"
  kill \$own; wait \$own
  $hourglassd --allow-root --listen 127.0.0.1:53 --upstream 127.0.0.2:53 --dnssec off --control $work/control.sock \
    2>>$work/daemon.log & own=\$!
  i=0; until $ctl stats >/dev/null 2>&1; do i=\$((i+1)); [ \$i -gt 200 ] && exit 98; sleep 0.05; done
  echo "after-restart: \$($ctl links | tr '\n' ' ')"
  /usr/libexec/hourglass/hook sync
  echo "after-sync: \$($ctl links | tr '\n' ' ')"
  echo "after-sync-answer: \$(dig @127.0.0.1 +short +tries=1 +time=2 after-sync.corp.example A)"
fi
kill \$own \$def \$vpn; wait \$own; wait \$def; wait \$vpn
exit 0
EOF
out=$(unshare -rmn sh "$work/ns.sh" 2>&1) && rc=0 || rc=$?
echo "$out"
((rc != 99)) || fail "mounting in the namespace failed"
((rc != 98)) || { cat "$work/daemon.log" "$work/vpn.log" "$work/default.log"; fail "the servers did not start"; }
((rc == 0)) || fail "the namespace script exited $rc"
asked=$(wc -l <"$work/asked")
lost=$(grep -c ' LOST$' "$work/asked" || true)
echo "asked $asked names, $lost lost"
((lost == 0)) || fail "$lost queries lost"
grep -qvE ' (192\.0\.2\.10|192\.0\.2\.99)$' "$work/asked" && fail "a wrong answer: $(grep -vE ' (192\.0\.2\.10|192\.0\.2\.99)$' "$work/asked" | head -3)"
phases="openvpn ctl"
((have_openresolv)) && phases="openresolv $phases"
for p in $phases; do
  for dir in up down; do
    line=$(grep "^$p $dir: " <<<"$out") || fail "$p $dir: no result"
    ms=$(sed -n 's/.* sent \([0-9]*\) ms after.*/\1/p' <<<"$line")
    [[ -n $ms ]] || fail "$p $dir: the answer never changed"
    ((ms < 1000)) || fail "$p $dir: took $ms ms"
  done
  # Between the end of up and the start of down every answer is the VPN's; every query sent
  # after down returned and before the next phase's up is the default's (no stale routing).
  read -r t1 t2 _ < <(sed -n "s/^$p down-window //p" <<<"$out")
  awk -v a="$t1" -v b="$t2" '$1 >= a && $1 < b && $3 != "192.0.2.99" {bad++} END {exit bad > 0}' \
    "$work/asked" || fail "$p: a default answer while the VPN was up"
  echo "$p: $(awk -v a="$t1" -v b="$t2" '$1 >= a && $1 < b' "$work/asked" | wc -l) queries while up, all to the VPN"
done
if ((have_openresolv)); then
  sed -n '/^== getent$/,/^== end$/p' <<<"$out" | grep -q '^192\.0\.2\.99 *intranet\.corp\.example$' ||
    fail "getent hosts intranet did not use the VPN's search domain"
else
  echo "openresolv is not installed (scripts/install-deps test): its phase skipped"
fi
if ((have_openresolv)); then
  grep -q '^before-restart: tun0 dns=127.0.0.9' <<<"$out" || fail "tun0 not a link before the restart"
  grep -q '^after-restart: *$' <<<"$out" || fail "links after a restart before the sync"
  grep -q '^after-sync: tun0 dns=127.0.0.9' <<<"$out" || fail "hook sync did not give tun0 back"
  grep -q '^after-sync-answer: 192.0.2.99$' <<<"$out" || fail "after the sync corp names do not go to the VPN"
fi
grep -q '^links-at-end: *$' <<<"$out" || fail "links left after every down: $(grep '^links-at-end' <<<"$out")"
[[ $(md5sum /etc/resolv.conf 2>/dev/null || echo none) == "$resolv_md5" ]] || fail "the machine's /etc/resolv.conf changed"
[[ $(md5sum /etc/resolvconf.conf 2>/dev/null || echo none) == "$rcconf_md5" ]] || fail "the machine's /etc/resolvconf.conf changed"
echo "vpn links ok"
