#!/usr/bin/env bash
# The live check at CI size: tools/rehearse/live-check/run with knotd behind hourglassd,
# Unbound (with and without prefetch), dnsmasq, BIND 9 and Knot Resolver, each asking from its
# own loopback address (in its own network namespace when `unshare -rn` works), TTL 20 → 5 s,
# 35 s per phase; then the projection of phase 1 to TTL 5 against what knotd really received.
#
#   live_check_test.sh SOURCE_DIR BUILD_DIR       (exit 77: a program is missing)
#
# Size and tolerances. load.py gives each resolver 30 q/s over 100 names, Zipf(1): name i has
# λ_i = 30/(H₁₀₀·(i+1)) = 5.8/(i+1) q/s, so λT runs from 116 to 1.2 at TTL 20 and from 29 to
# 0.29 at TTL 5 — hot and cold names on both sides of the change. A TTL-obeying cache's misses
# are a renewal process with cycle T + Exp(λ), so one cache sends ≈ D/(T + 1/λ) per name with
# variance D·λ⁻²/(T + 1/λ)³; the projection moves with phase 1's count by (μ₁/μ₂)² (delta
# method). `tally.py expect 30 100 20 5 35` sums that over the names: one cache ≈ 126 queries
# at TTL 20 and 300 at TTL 5 in 35 s; projected − real has sd ≈ 5.4 % (Poisson counts would
# give 10.6 %, an upper bound: a renewal count is less variable than Poisson). Hence:
#   - each asserted kind within ±KIND_TOL = 20 % (3.7 sd of the renewal estimate, 1.9 of the
#     Poisson bound; the issue's target for long runs is ±15 %);
#   - the asserted kinds together (two caches, ~600 queries at TTL 5: sd ≈ 5.4 %/√2 = 3.8 %)
#     within ±ZONE_TOL = 12 % (3.1 sd; the issue's target for long runs is ±10 %).
# The 35 s phases keep the test at about two minutes (two phases, the 21 s for the TTL-20
# copies to run out, start-up and the projections). A projection off by a factor (a model
# error, a resolver not behind its own address, a trace cut wrongly) fails either; the run
# prints the whole table whatever it asserts.
set -euo pipefail
src=${1:?usage: live_check_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: live_check_test.sh SOURCE_DIR BUILD_DIR}
secs=35 old=20 new=5 rate=30 names=100
KIND_TOL=20 ZONE_TOL=12
# The plain TTL caches: the model handles them today.
ASSERTED_KINDS="unbound dnsmasq"
# Knot Resolver with policy.STUB keeps answers ~5 s whatever the TTL and asks again about every
# 6 s: `project` reads its gaps as several caches behind one address and projects it several
# times too high (and the whole zone with it). Recognising a fixed refetch period is a later step
# of issue 37; set ASSERT_KRESD=1 then, and kresd's row and the whole zone's ("total") are held to
# the same tolerances.
ASSERT_KRESD=0
# The prefetchers (hourglassd, Unbound with prefetch, BIND 9's default prefetch 2 9) refresh
# some answers before they expire; with two or three gaps per series in a 35 s phase, `project`
# reads those shortened gaps as more demand (or as several caches) and projects them high at this
# size: +18 % to +31 % for Unbound with prefetch and BIND, +3 % to +23 % for hourglassd (whose
# prefetch is a random ramp) in runs here, where 300 s phases put all three within +7 %. Set
# ASSERT_PREFETCHERS=1 once the model reads short traces of prefetchers right.
ASSERT_PREFETCHERS=0
((ASSERT_KRESD)) && ASSERTED_KINDS+=" kresd total"
((ASSERT_PREFETCHERS)) && ASSERTED_KINDS+=" hourglassd unbound-prefetch bind"

tsv=$(mktemp /tmp/hg-live-check-test-XXXXXX.tsv)
trap 'rm -f "$tsv"' EXIT
rc=0
"$src/tools/rehearse/live-check/run" --tsv "$tsv" "$build" $secs $old $new $rate $names || rc=$?
((rc == 77)) && exit 77
((rc == 0)) || { echo "FAIL: the live check did not run to the end (exit $rc)"; exit 1; }

fail=0
check() {  # check KIND TOLERANCE_PCT
  local row
  row=$(awk -F'\t' -v k="$1" '$1 == k' "$tsv")
  [[ -n $row ]] || { echo "FAIL: no row for $1 in the result"; fail=1; return; }
  IFS=$'\t' read -r kind old_q real proj lo hi err _ <<<"$row"
  if awk -v e="$err" -v t="$2" 'BEGIN { exit !(e >= -t && e <= t) }' && [[ $old_q -gt 50 ]]; then
    echo "ok:   $kind projected $proj vs real $real ($err %, within ±$2 %)"
  else
    echo "FAIL: $kind projected $proj [$lo, $hi] vs real $real: $err %, outside ±$2 % (or fewer than 50 queries at TTL $old: $old_q)"
    fail=1
  fi
}
for k in $ASSERTED_KINDS; do check "$k" $KIND_TOL; done
# The zone as far as it is asserted: the asserted kinds' projections and real counts summed.
awk -F'\t' -v ks=" ${ASSERTED_KINDS/ total/} " -v t=$ZONE_TOL '
  index(ks, " " $1 " ") { p += $4; r += $3 }
  END {
    e = r ? 100 * (p - r) / r : 1e9
    printf "%s zone (%s): projected %.0f vs real %.0f (%+.1f %%, tolerance ±%d %%)\n",
           (e >= -t && e <= t) ? "ok:  " : "FAIL:", substr(ks, 2, length(ks) - 2), p, r, e, t
    exit !(e >= -t && e <= t)
  }' "$tsv" || fail=1
for k in hourglassd unbound-prefetch bind kresd total modelled; do
  [[ " $ASSERTED_KINDS " == *" $k "* ]] && continue
  awk -F'\t' -v k="$k" '$1 == k { printf "not asserted: %s projected %s vs real %s (%s %%)\n", $1, $4, $3, $7 }' "$tsv"
done
((fail == 0)) && echo "live check ok"
exit $fail
