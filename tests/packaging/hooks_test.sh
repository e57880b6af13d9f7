#!/usr/bin/env bash
# The network managers' hooks (packaging/hooks, docs/network-managers.md): what each one makes
# of what its manager hands it, as the hourglass-ctl command lines it runs. hourglass-ctl is a
# recorder here (the daemon's side, with the real hourglassd, is
# tests/integration/hooks_test.cc); the managers' sides are real where the program is:
# openresolv's resolvconf runs the installed stub /lib/resolvconf/hourglass, in a user and
# mount namespace whose /etc, /lib/resolvconf and /usr/libexec are overlays (the machine's own
# files are never written). dhclient, OpenVPN and NetworkManager cannot run here: their hooks
# are run with the environment each documents. Hostile values (shell syntax, bad addresses,
# bad names) must be left out, never run.
#
# usage: hooks_test.sh SOURCE_DIR
set -euo pipefail
src=$1
hook=$src/packaging/hooks/hook
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The recorder: "links" answers like a running hourglassd; every call is logged.
cat >"$work/ctl" <<EOF
#!/bin/sh
# Every call must be bounded in time (a hung hourglassd must not hang the manager).
if [ "\$1" = --timeout ] && [ "\$2" = 3 ]; then shift 2; else printf 'UNBOUNDED ' >>"$work/calls"; fi
printf '%s\n' "\$*" >>"$work/calls"
[ -e "$work/down" ] && exit 2
exit 0
EOF
chmod +x "$work/ctl"
export HOURGLASS_CTL=$work/ctl HOURGLASS_HOOK_STATE=$work/state
label=''
calls() { grep -v '^links$' "$work/calls" 2>/dev/null || true; }
reset() { rm -f "$work/calls" "$work/pwned"; }
expect() {  # expect "LINE..." : the link calls, in order, are exactly these
  local want got
  want=$(printf '%s\n' "$@")
  got=$(calls)
  [[ $got == "$want" ]] || fail "$label: expected
$want
got
$got"
}

# --- dhclient (its env as dhclient-script gets it) --------------------------------------------
# Debian's openresolv ships a dhclient hook itself: then ours leaves it to the subscriber.
export HOURGLASS_RESOLVCONF=$work/no-resolvconf
label=dhclient-bound; reset
env reason=BOUND interface=eth1 new_domain_name_servers="192.0.2.7 bogus 127.0.0.1 192.0.2.8" \
  new_domain_search="a.example. b.example" new_domain_name="a.example" sh "$hook" dhclient
expect "link eth1 --dns 192.0.2.7 --dns 192.0.2.8 --domain a.example --domain b.example --default-route yes"
label=dhclient-release; reset
env reason=RELEASE interface=eth1 sh "$hook" dhclient
expect "link eth1 --revert"
label=dhclient-hostile; reset
env reason=BOUND interface='eth1;touch' new_domain_name_servers="192.0.2.7" sh "$hook" dhclient 2>/dev/null
expect ""
env reason=BOUND interface=eth1 new_domain_name_servers="\$(touch $work/pwned) 192.0.2.1;id 999.1.1.1 1.2.3 ::1 2001:db8::53" \
  new_domain_search="\`touch $work/pwned\` a..b -x.example ok.example" sh "$hook" dhclient 2>/dev/null
expect "link eth1 --dns 2001:db8::53 --domain ok.example --default-route yes"
[[ ! -e $work/pwned ]] || fail "dhclient: a value was run"
label=dhclient-no-servers; reset
env reason=RENEW interface=eth1 new_domain_search="x.example" sh "$hook" dhclient
expect "link eth1 --revert"

# --- OpenVPN up/down (foreign_option_N as OpenVPN sets them) ----------------------------------
label=openvpn-split; reset
env script_type=up dev=tun1 foreign_option_1="dhcp-option DNS 10.8.0.1" \
  foreign_option_2="dhcp-option DOMAIN-ROUTE corp.example" \
  foreign_option_3="dhcp-option DNS \$(touch $work/pwned)" \
  foreign_option_4="dhcp-option DOMAIN vpn.example" foreign_option_6="dhcp-option DNS 10.8.0.9" \
  sh "$hook" openvpn tun1 1500 0 10.8.0.2 255.255.255.0 init 2>/dev/null
# foreign_option_5 is missing: OpenVPN numbers them without gaps, the list ends there.
expect "link tun1 --dns 10.8.0.1 --domain ~corp.example --domain vpn.example --default-route no"
[[ ! -e $work/pwned ]] || fail "openvpn: a value was run"
label=openvpn-full; reset
env script_type=up dev=tun1 foreign_option_1="dhcp-option DNS6 fd00::53" \
  foreign_option_2="dhcp-option DOMAIN-ROUTE ." sh "$hook" openvpn
expect "link tun1 --dns fd00::53 --default-route yes"
label=openvpn-down; reset
env script_type=down dev=tun1 sh "$hook" openvpn
expect "link tun1 --revert"
label=openvpn-bad-dev; reset
env script_type=up dev='../../x' foreign_option_1="dhcp-option DNS 10.8.0.1" sh "$hook" openvpn 2>/dev/null
expect ""

# --- NetworkManager dispatcher (the documented env) -------------------------------------------
label=nm-up; reset
env DEVICE_IP_IFACE=wlan0 IP4_NAMESERVERS="192.0.2.1 192.0.2.2" IP4_DOMAINS="home.example" \
  IP6_NAMESERVERS="2001:db8::1 fe80::1%wlan0" sh "$hook" networkmanager wlan0 up 2>/dev/null
expect "link wlan0 --dns 192.0.2.1 --dns 192.0.2.2 --dns 2001:db8::1 --domain home.example --default-route yes"
label=nm-vpn-up; reset
env VPN_IP_IFACE=tun2 DEVICE_IP_IFACE=wlan0 VPN_IP4_NAMESERVERS="10.9.0.1" VPN_IP4_DOMAINS="corp.example" \
  IP4_NAMESERVERS="192.0.2.1" sh "$hook" networkmanager tun2 vpn-up
expect "link tun2 --dns 10.9.0.1 --domain corp.example --default-route yes"
label=nm-down; reset
env VPN_IP_IFACE=tun2 sh "$hook" networkmanager tun2 vpn-down
env DEVICE_IP_IFACE=wlan0 sh "$hook" networkmanager wlan0 down
env sh "$hook" networkmanager none hostname
expect "link tun2 --revert" "link wlan0 --revert"

# --- what resolvconf -i/-l print, hostile (openresolv itself runs $(...) in what it is given
# with -a, so a hostile line cannot be fed through it; its output is what the hook parses) --
cat >"$work/resolvconf" <<EOF
#!/bin/sh
case "\$1" in
  -i) echo 'tun0 eth0;id \$(id) -x lo' ;;
  -v) echo "NAMESERVERS='192.0.2.1'" ;;
  -l) for i in tun0 'eth0;id' '\$(id)' -x lo ghost; do
        printf '# resolv.conf from %s\n' "\$i"
        printf 'nameserver \$(touch $work/pwned)\nnameserver 192.0.2.1;id\nnameserver 192.0.2.1\nsearch \`id\` a.example \$(id) b..example\ndomain a.example.\nnameserver 10.0.0.1 extra\n\n'
      done ;;
esac
EOF
chmod +x "$work/resolvconf"
label=openresolv-hostile-output; reset
HOURGLASS_RESOLVCONF=$work/resolvconf sh "$hook" openresolv -a tun0 2>/dev/null
expect "link tun0 --dns 192.0.2.1 --dns 10.0.0.1 --domain a.example --default-route yes" \
  "link lo --dns 192.0.2.1 --dns 10.0.0.1 --domain a.example --default-route yes"
[[ ! -e $work/pwned ]] || fail "openresolv output: a value was run"
label=openresolv-gone; reset
# shellcheck disable=SC2016 # the $1 is the stand-in's own
printf '#!/bin/sh\n[ "$1" = -i ] && echo lo\n[ "$1" = -l ] && printf "# resolv.conf from lo\\nnameserver 192.0.2.9\\n"\nexit 0\n' >"$work/resolvconf"
HOURGLASS_RESOLVCONF=$work/resolvconf sh "$hook" sync
expect "link lo --dns 192.0.2.9 --default-route no" "link tun0 --revert"
rm -rf "$work/state"

# --- hourglassd not running, hourglass-ctl gone: nothing, and exit 0 --------------------------
label=daemon-down; reset
touch "$work/down"
env reason=BOUND interface=eth1 new_domain_name_servers=192.0.2.7 sh "$hook" dhclient ||
  fail "dhclient hook failed while hourglassd is down"
rm "$work/down"
HOURGLASS_CTL=$work/absent sh "$hook" openvpn || fail "hook failed without hourglass-ctl"
HOURGLASS_CTL=$work/absent sh "$hook" sync || fail "sync failed without hourglass-ctl"

# --- openresolv, for real, through the stub the package installs ------------------------------
unset HOURGLASS_RESOLVCONF
if ! command -v resolvconf >/dev/null || [[ $(resolvconf --version 2>/dev/null) != openresolv* ]]; then
  echo "openresolv is not installed (scripts/install-deps test): its part skipped"
  echo "hooks ok (without openresolv)"
  exit 0
fi
if ! unshare -rm true 2>/dev/null; then
  echo "no user namespaces here: the openresolv part skipped"
  echo "hooks ok (without openresolv)"
  exit 0
fi
mkdir -p "$work"/{etc,lib,libexec}/{u,w} "$work/libexec/u/hourglass" "$work/lib/u" "$work/rcstate"
cp "$hook" "$work/libexec/u/hourglass/hook"
cp "$src/packaging/hooks/openresolv-subscriber" "$work/lib/u/hourglass"
chmod 755 "$work/libexec/u/hourglass/hook" "$work/lib/u/hourglass"
cat >"$work/etc/u/resolvconf.conf" <<EOF
resolv_conf=/etc/resolv.conf
state_dir=$work/rcstate
name_servers=127.0.0.1
EOF
cat >"$work/ns.sh" <<EOF
set -e
mount -t overlay overlay -o lowerdir=/etc,upperdir=$work/etc/u,workdir=$work/etc/w /etc
mount -t overlay overlay -o lowerdir=/lib/resolvconf,upperdir=$work/lib/u,workdir=$work/lib/w /lib/resolvconf
mount -t overlay overlay -o lowerdir=/usr/libexec,upperdir=$work/libexec/u,workdir=$work/libexec/w /usr/libexec
step() { echo "== \$1" >>"$work/calls"; }
step a-tun0
printf 'nameserver 127.0.0.9\nsearch corp.example\ndomain corp.example\n' | resolvconf -a tun0
step a-eth0
printf 'nameserver 192.0.2.1\nnameserver 2001:db8::1\nsearch home.example\n' | resolvconf -a eth0 -p
step u
resolvconf -u
step d-tun0
resolvconf -d tun0
step resolv.conf
cat /etc/resolv.conf >>"$work/calls"
EOF
reset
unshare -rm sh "$work/ns.sh" >"$work/ns.log" 2>&1 || { cat "$work/ns.log"; fail "openresolv in a namespace"; }
got=$(grep -v '^links$' "$work/calls")
want="== a-tun0
link tun0 --dns 127.0.0.9 --domain corp.example --default-route yes
== a-eth0
link tun0 --dns 127.0.0.9 --domain corp.example --default-route yes
link eth0 --dns 192.0.2.1 --dns 2001:db8::1 --domain home.example --default-route no
== u
link tun0 --dns 127.0.0.9 --domain corp.example --default-route yes
link eth0 --dns 192.0.2.1 --dns 2001:db8::1 --domain home.example --default-route no
== d-tun0
link eth0 --dns 192.0.2.1 --dns 2001:db8::1 --domain home.example --default-route no
link tun0 --revert
== resolv.conf"
[[ $got == "$want"* ]] || fail "openresolv: expected
$want
got
$got"
# resolv.conf as openresolv wrote it: hourglassd only (name_servers=127.0.0.1).
grep -q '^nameserver 127.0.0.1$' <<<"$got" || fail "openresolv: resolv.conf does not name 127.0.0.1"
[[ ! -e /etc/resolv.conf.hourglass-new ]] || fail "the machine's /etc was written"
echo "openresolv: $(grep -c '^link ' <<<"$got") link calls over 4 resolvconf runs"
echo "hooks ok"
