#!/usr/bin/env bash
# The Debian package, end to end, from the build directory the tests run in (no compiling):
# ./scripts/package --build-dir BUILD, its contents (dpkg-deb -c/-I), lintian (no errors),
# then - as root only - dpkg -i on this machine, the installed hourglassd started on a
# loopback test port against a scripted upstream (hg-bench-floor) and asked with dig,
# dpkg --purge, and nothing of the package left. The network managers' hooks: installed, doing
# nothing (exit 0, no output) while hourglassd is not running, gone (or, the dhclient conffile,
# inert) after remove, gone after purge. /etc/resolv.conf is never touched (checked);
# the purge and the daemon's stop run on every exit path.
#
# usage: package_test.sh SOURCE_DIR BUILD_DIR FLOOR_BINARY
set -euo pipefail
src=$1 build=$2 floor=$3
work=$(mktemp -d)
pids=()
installed_here=0
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/support/shell_kit.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/shell_kit.sh"
cleanup() {
  stop_pids
  if ((installed_here)); then dpkg --purge hourglass >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- build and inspect ------------------------------------------------------------------------
"$src/scripts/package" --build-dir "$build" --out "$work" >"$work/package.log" 2>&1 ||
  { cat "$work/package.log"; fail "scripts/package"; }
deb=$(ls "$work"/hourglass_*_amd64.deb)
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"
dpkg-deb -c "$deb" >"$work/contents"
for f in ./usr/sbin/hourglassd ./usr/bin/hourglass-ctl ./usr/bin/hourglass-rehearse \
         ./lib/systemd/system/hourglassd.service ./etc/hourglass/hourglass.toml \
         ./usr/share/hourglass/default-profile.toml ./usr/libexec/hourglass/prepare-upstream \
         ./usr/share/man/man8/hourglassd.8.gz ./usr/share/man/man8/hourglass-ctl.8.gz \
         ./usr/share/man/man1/hourglass-rehearse.1.gz ./usr/share/man/man5/hourglass.toml.5.gz \
         ./usr/share/bash-completion/completions/hourglassd \
         ./usr/share/bash-completion/completions/hourglass-ctl \
         ./usr/share/bash-completion/completions/hourglass-rehearse \
         ./usr/share/doc/hourglass/copyright ./usr/share/doc/hourglass/changelog.gz \
         ./usr/share/doc/hourglass/README.md ./usr/libexec/hourglass/hook \
         ./lib/resolvconf/hourglass ./usr/lib/NetworkManager/dispatcher.d/60-hourglass \
         ./etc/dhcp/dhclient-exit-hooks.d/hourglass; do
  grep -qE " $f\$" "$work/contents" || fail "$f is not in the package"
done
# Every file owned by root, nothing from the build or the tests.
if awk '$2 != "root/root"' "$work/contents" | grep -q .; then fail "files not owned by root"; fi
if grep -qE 'hg_|_test|/build' "$work/contents"; then fail "build or test files in the package"; fi
dpkg-deb -I "$deb" >"$work/info"
grep -q '^ Package: hourglass$' "$work/info" || fail "Package:"
grep -q '^ Architecture: amd64$' "$work/info" || fail "Architecture:"
grep -qE '^ Depends: .*libc-ares2' "$work/info" || fail "Depends: lacks libc-ares2"
dpkg-deb -e "$deb" "$work/control"
[[ $(cat "$work/control/conffiles") == "/etc/hourglass/hourglass.toml
/etc/dhcp/dhclient-exit-hooks.d/hourglass" ]] || fail "conffiles"
# The hooks that are run as programs are executable; the dhclient one is sourced (0644).
for f in ./usr/libexec/hourglass/hook ./lib/resolvconf/hourglass \
         ./usr/lib/NetworkManager/dispatcher.d/60-hourglass; do
  grep -qE "^-rwxr-xr-x .* $f\$" "$work/contents" || fail "$f is not mode 0755"
done
grep -qE "^-rw-r--r-- .* ./etc/dhcp/dhclient-exit-hooks.d/hourglass\$" "$work/contents" ||
  fail "the dhclient hook is not mode 0644"
grep -q '^ExecStartPost=-/usr/libexec/hourglass/hook sync$' \
  <(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./lib/systemd/system/hourglassd.service) ||
  fail "the packaged unit does not sync the openresolv links at start"
grep -q '^ExecStart=/usr/sbin/hourglassd --config /etc/hourglass/hourglass.toml$' \
  <(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./lib/systemd/system/hourglassd.service) ||
  fail "the packaged unit's ExecStart"
# The licence: the machine-readable copyright file names MIT and carries its text (LICENSE).
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/hourglass/copyright >"$work/copyright"
grep -q '^License: MIT$' "$work/copyright" || fail "the copyright file names no licence"
grep -q '^ Permission is hereby granted, free of charge' "$work/copyright" ||
  fail "the copyright file lacks the licence text"
grep -q '^Permission is hereby granted, free of charge' "$src/LICENSE" || fail "LICENSE"

# --- lintian: no errors (the warnings kept are listed in docs/packaging.md) -------------------
lintian --fail-on error --tag-display-limit 0 "$deb" >"$work/lintian" 2>&1 ||
  { cat "$work/lintian"; fail "lintian reports errors"; }
echo "lintian: $(grep -c '^E:' "$work/lintian" || true) errors, $(grep -c '^W:' "$work/lintian" || true) warnings"
grep -v '^running with root' "$work/lintian" | sed 's/^/  /' || true

# --- install, run, purge (root only: CI runs as root) ------------------------------------------
if (($(id -u) != 0)); then echo "not root: install part skipped"; echo "package ok (no install)"; exit 0; fi
if dpkg-query -W -f='${Status}' hourglass 2>/dev/null | grep -q installed; then
  fail "a hourglass package is installed on this machine already; not touching it"
fi
snapshot() {
  find /etc /lib/systemd /lib/resolvconf /usr/lib/NetworkManager /usr/sbin /usr/bin /usr/libexec /usr/share/hourglass \
       /usr/share/doc/hourglass /usr/share/bash-completion /usr/share/man/man1 \
       /usr/share/man/man5 /usr/share/man/man8 /var/lib/hourglass /var/lib/private \
       /var/lib/systemd -xdev -not -path '/etc/ld.so.cache' \
       -not -regex '/etc/\(passwd\|group\|shadow\|gshadow\|subuid\|subgid\)-?' 2>/dev/null |
    sort || true  # a folder may not exist
}
resolv_before=$(md5sum /etc/resolv.conf 2>/dev/null || echo none)
snapshot >"$work/before"
# dpkg may be busy with another install on a shared machine: wait for its lock (60 s at most).
installed_here=1
for ((i = 0; i < 60; i++)); do
  if dpkg -i "$deb" >"$work/install.log" 2>&1; then ok=1; break; fi
  ok=0
  grep -q 'lock' "$work/install.log" || break
  sleep 1
done
((ok)) || { cat "$work/install.log"; fail "dpkg -i"; }
sed 's/^/  dpkg -i: /' "$work/install.log"
grep -q 'prepare-upstream: wrote /etc/hourglass/upstream.conf' "$work/install.log" ||
  fail "postinst did not say what it wrote to upstream.conf"
[[ -f /etc/hourglass/upstream.conf ]] || fail "no /etc/hourglass/upstream.conf after install"
if grep -qE '^nameserver (127\.0\.0\.1|::1)$' /etc/hourglass/upstream.conf; then
  fail "upstream.conf has a forwarding loop"
fi
# The system user for starts without systemd (the unit uses a dynamic user); like every
# Debian system user it stays after a purge, since files it made may be left elsewhere.
getent passwd hourglass | grep -q ':/nonexistent:' || fail "postinst did not create the system user hourglass"
hg_uid=$(id -u hourglass)
if [[ ! -d /run/systemd/system ]]; then
  grep -q 'systemd is not running, so hourglassd was not started' "$work/install.log" ||
    fail "postinst did not say that it did not start hourglassd"
  grep -q 'hourglassd --config /etc/hourglass/hourglass.toml --user hourglass' "$work/install.log" ||
    fail "postinst did not give the command to start hourglassd"
fi
[[ -L /etc/systemd/system/multi-user.target.wants/hourglassd.service ]] ||
  fail "hourglassd.service is not enabled"
/usr/sbin/hourglassd --version | grep -q '^hourglass ' || fail "installed hourglassd --version"
for page in hourglassd hourglass-ctl hourglass-rehearse hourglass.toml; do
  man "$page" 2>/dev/null | grep -q 'NAME' || fail "man $page"
done

# The installed hooks while no hourglassd answers: nothing said, exit 0 (a hook must never make
# its network manager fail). HOURGLASS_CONTROL: a socket nobody listens on, whatever runs here.
hooks_quiet() {  # hooks_quiet WHEN
  local out
  export HOURGLASS_CONTROL=$work/nobody.sock
  out=$( { [[ ! -e /lib/resolvconf/hourglass ]] || /lib/resolvconf/hourglass -u tun0; } 2>&1) ||
    fail "$1: the openresolv subscriber failed"
  out+=$( { [[ ! -e /usr/lib/NetworkManager/dispatcher.d/60-hourglass ]] ||
            DEVICE_IP_IFACE=eth9 IP4_NAMESERVERS=192.0.2.1 \
            /usr/lib/NetworkManager/dispatcher.d/60-hourglass eth9 up; } 2>&1) ||
    fail "$1: the NetworkManager dispatcher script failed"
  out+=$(reason=BOUND interface=eth9 new_domain_name_servers=192.0.2.1 \
         bash -c '. /etc/dhcp/dhclient-exit-hooks.d/hourglass' 2>&1) ||
    fail "$1: the dhclient hook failed"
  out+=$(script_type=up dev=tun9 foreign_option_1='dhcp-option DNS 192.0.2.1' \
         sh -c '[ ! -e /usr/libexec/hourglass/hook ] || /usr/libexec/hourglass/hook openvpn' 2>&1) ||
    fail "$1: the OpenVPN hook failed"
  unset HOURGLASS_CONTROL
  [[ -z $out ]] || fail "$1: the hooks said: $out"
}
hooks_quiet "installed, hourglassd not running"

"$floor" 127.0.0.1:0 2>"$work/floor.log" &
pids+=($!)
fp=$(port_of "$work/floor.log") || fail "the scripted upstream did not start"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# As an administrator without systemd would start it: as root, switching to the package's user.
/usr/sbin/hourglassd --config /etc/hourglass/hourglass.toml --listen "127.0.0.1:$port" \
  --upstream "127.0.0.1:$fp" --control "$work/control.sock" --cache-file "$work/cache" \
  --user hourglass 2>"$work/daemon.log" &
pids+=($!)
answer=""
for ((i = 0; i < 50; i++)); do
  answer=$(dig @127.0.0.1 -p "$port" probe.example. A +short +tries=1 +time=1 2>/dev/null || true)
  [[ $answer == 198.18.0.1 ]] && break
  sleep 0.1
done
[[ $answer == 198.18.0.1 ]] || { cat "$work/daemon.log"; fail "no answer from the installed hourglassd"; }
echo "installed hourglassd answered: probe.example. A $answer"
read -r _ ruid euid _ < <(grep '^Uid:' "/proc/${pids[1]}/status")
[[ $ruid == "$hg_uid" && $euid == "$hg_uid" ]] || fail "hourglassd runs as uid $ruid/$euid, not hourglass ($hg_uid)"
grep -q '^CapEff:[[:space:]]*0000000000000000$' "/proc/${pids[1]}/status" || fail "hourglassd kept capabilities"
echo "installed hourglassd runs as hourglass (uid $hg_uid), no capabilities"
/usr/bin/hourglass-ctl --socket "$work/control.sock" stats | grep -q '^server.queries_udp [1-9]' ||
  fail "installed hourglass-ctl stats"
# The installed hooks reach the installed hourglassd: NetworkManager's up and down, OpenVPN's.
export HOURGLASS_CONTROL=$work/control.sock
DEVICE_IP_IFACE=hgtest0 IP4_NAMESERVERS=192.0.2.53 IP4_DOMAINS=corp.example \
  /usr/lib/NetworkManager/dispatcher.d/60-hourglass hgtest0 up
script_type=up dev=hgtest1 foreign_option_1='dhcp-option DNS 192.0.2.54' \
  foreign_option_2='dhcp-option DOMAIN-ROUTE vpn.example' /usr/libexec/hourglass/hook openvpn
links=$(/usr/bin/hourglass-ctl links)
grep -q '^hgtest0 dns=192.0.2.53:53 domains=corp.example default-route=yes$' <<<"$links" ||
  fail "the dispatcher script set no link: $links"
grep -q '^hgtest1 dns=192.0.2.54:53 domains=~vpn.example default-route=no$' <<<"$links" ||
  fail "the OpenVPN hook set no link: $links"
DEVICE_IP_IFACE=hgtest0 /usr/lib/NetworkManager/dispatcher.d/60-hourglass hgtest0 down
script_type=down dev=hgtest1 /usr/libexec/hourglass/hook openvpn
[[ -z $(/usr/bin/hourglass-ctl links) ]] || fail "links left after down: $(/usr/bin/hourglass-ctl links)"
unset HOURGLASS_CONTROL
echo "installed hooks: NetworkManager and OpenVPN links set and reverted"
kill "${pids[1]}"
wait "${pids[1]}" 2>/dev/null || true

# Remove: the programs and the unit's enablement go, the configuration stays (Debian's rule
# for conffiles) until the purge.
dpkg --remove hourglass >"$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "dpkg --remove"; }
[[ ! -e /usr/sbin/hourglassd && ! -e /lib/systemd/system/hourglassd.service ]] ||
  fail "programs or unit left after remove"
[[ ! -e /etc/systemd/system/multi-user.target.wants/hourglassd.service ]] ||
  fail "the service is still enabled after remove"
[[ -f /etc/hourglass/hourglass.toml ]] || fail "remove deleted the conffile (that is purge's job)"
[[ ! -e /usr/libexec/hourglass/hook && ! -e /lib/resolvconf/hourglass &&
   ! -e /usr/lib/NetworkManager/dispatcher.d/60-hourglass ]] || fail "hooks left after remove"
[[ -f /etc/dhcp/dhclient-exit-hooks.d/hourglass ]] || fail "remove deleted the dhclient conffile"
hooks_quiet "removed"
dpkg --purge hourglass >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge"; }
installed_here=0
snapshot >"$work/after"
if ! diff "$work/before" "$work/after" >"$work/left"; then
  cat "$work/left"
  fail "purge left the machine different from before the install"
fi
[[ $(md5sum /etc/resolv.conf 2>/dev/null || echo none) == "$resolv_before" ]] ||
  fail "/etc/resolv.conf changed"
echo "package ok: installed, answered, removed, purged, nothing left"
