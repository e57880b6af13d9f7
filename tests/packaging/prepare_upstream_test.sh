#!/usr/bin/env bash
# packaging/prepare-upstream (run by the postinst) on scratch files: keeps the real servers
# of a resolv.conf, leaves out hourglassd's own listen addresses (a forwarding loop) and says
# so, writes a file without servers (and says what to do) when nothing usable is left, and
# never overwrites an upstream.conf that exists.
#
# usage: prepare_upstream_test.sh PREPARE_UPSTREAM
set -euo pipefail
prep=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf '%s\n' '# from DHCP' 'search example.com' 'nameserver 127.0.0.1' 'nameserver 192.0.2.53' \
  'nameserver ::1' 'nameserver 2001:db8::53' 'nameserver 0.0.0.0' 'options edns0' >"$work/resolv.conf"
"$prep" "$work/resolv.conf" "$work/upstream.conf" >"$work/out"
cat "$work/out"
[[ $(grep '^nameserver' "$work/upstream.conf") == $'nameserver 192.0.2.53\nnameserver 2001:db8::53' ]] ||
  { cat "$work/upstream.conf"; fail "kept the wrong servers"; }
for a in 127.0.0.1 ::1 0.0.0.0; do
  grep -q "left out nameserver $a .*forwarding loop" "$work/out" || fail "did not say it left out $a"
done
grep -q "wrote $work/upstream.conf with nameserver 192.0.2.53 2001:db8::53" "$work/out" ||
  fail "did not say what it wrote"
[[ $(stat -c %a "$work/upstream.conf") == 644 ]] || fail "mode of upstream.conf"

# An upstream.conf that exists is the administrator's.
echo "nameserver 198.51.100.1" >"$work/upstream.conf"
"$prep" "$work/resolv.conf" "$work/upstream.conf" >"$work/out3"
grep -q "keeping $work/upstream.conf" "$work/out3" || fail "no word about keeping it"
[[ $(cat "$work/upstream.conf") == "nameserver 198.51.100.1" ]] || fail "overwrote upstream.conf"

# Only hourglassd's own address (resolv.conf already switched over): no server, and a hint.
echo "nameserver 127.0.0.1" >"$work/switched.conf"
"$prep" "$work/switched.conf" "$work/none.conf" >"$work/out2"
cat "$work/out2"
if grep -q '^nameserver' "$work/none.conf"; then fail "a loop server was written"; fi
grep -q 'WITHOUT any nameserver' "$work/out2" || fail "no warning about the empty file"

# No resolv.conf at all.
"$prep" "$work/missing.conf" "$work/none2.conf" >"$work/out4"
grep -q 'WITHOUT any nameserver' "$work/out4" || fail "a missing resolv.conf"
echo "prepare-upstream ok"
