#!/usr/bin/env bash
# hourglassd's log lines as journald gets them: with JOURNAL_STREAM naming the file its
# stderr is (device:inode, as systemd sets it), every line starts with <3>..<6> and has no
# time stamp; with JOURNAL_STREAM naming something else (inherited, stderr redirected), the
# lines are plain. --log-queries=json writes one JSON object per query, a hostile name
# (quote, backslash, control and high bytes) escaped so that the line still parses.
#
# usage: journal_test.sh HOURGLASSD FLOOR_BINARY
set -euo pipefail
daemon=$1 floor=$2
work=$(mktemp -d)
pids=()
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/support/shell_kit.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/shell_kit.sh"
cleanup() {
  stop_pids
  rm -rf "$work"
}
trap cleanup EXIT

"$floor" 127.0.0.1:0 2>"$work/floor.log" &
pids+=($!)
fp=$(port_of "$work/floor.log") || fail "the scripted upstream did not start"

run_daemon() {  # run_daemon LOG JOURNAL_STREAM ARGS...: start, one query, stop; LOG appended
  local log=$1 js=$2 port
  shift 2
  : >"$log"
  [[ $js == self ]] && js=$(stat -c '%d:%i' "$log")
  # As root (CI), hourglassd needs --allow-root (or --user) to start.
  local root=()
  (($(id -u) == 0)) && root=(--allow-root)
  JOURNAL_STREAM=$js "$daemon" --listen 127.0.0.1:0 --upstream "127.0.0.1:$fp" "${root[@]}" "$@" 2>>"$log" &
  local pid=$!
  pids+=("$pid")
  port=""
  for ((i = 0; i < 50; i++)); do
    port=$(sed -nE 's/.*listening on 127\.0\.0\.1:([0-9]+).*/\1/p' "$log" | head -1)
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { cat "$log"; fail "hourglassd did not listen"; }
  local answer=""
  for ((i = 0; i < 20; i++)); do
    answer=$(dig @127.0.0.1 -p "$port" "$QNAME" A +short +tries=1 +time=1 2>/dev/null || true)
    [[ $answer == 198.18.0.1 ]] && break
  done
  [[ $answer == 198.18.0.1 ]] || { cat "$log"; fail "no answer for $QNAME"; }
  for ((i = 0; i < 50; i++)); do grep -q "$QUERY_MARK" "$log" && break; sleep 0.1; done
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
}

# 1. stderr is the journal stream: every line prefixed, info and errors alike.
QNAME=probe.example. QUERY_MARK='query probe' run_daemon "$work/journal.log" self --log-queries
grep -q '^<6>hourglassd .*listening on 127\.0\.0\.1:' "$work/journal.log" || { cat "$work/journal.log"; fail "start line"; }
grep -q '^<6>query probe\.example\. A NOERROR' "$work/journal.log" || { cat "$work/journal.log"; fail "query line"; }
bad=$(grep -vE '^<[3-6]>' "$work/journal.log" || true)
[[ -z $bad ]] || fail "lines without a priority: $bad"
if grep -qE '^<[0-9]>[0-9]{4}-[0-9]{2}-[0-9]{2}|^<[0-9]>[A-Z][a-z]{2} [ 0-9][0-9] ' "$work/journal.log"; then
  fail "a line carries its own time stamp"
fi
echo "journal: $(wc -l <"$work/journal.log") lines, all with a priority"
: >"$work/err.log"
# shellcheck disable=SC2094  # stat reads the file's inode number, not what is written to it
JOURNAL_STREAM=$(stat -c '%d:%i' "$work/err.log") "$daemon" --cache-size 1 2>>"$work/err.log" &&
  fail "--cache-size 1 was accepted"
grep -q '^<3>--cache-size "1": ' "$work/err.log" || { cat "$work/err.log"; fail "error line"; }
echo "journal: a configuration error is <3>"

# 2. JOURNAL_STREAM inherited but stderr is another file: plain lines.
QNAME=probe.example. QUERY_MARK='query probe' run_daemon "$work/plain.log" 1:1 --log-queries
grep -q '^query probe\.example\. A NOERROR' "$work/plain.log" || { cat "$work/plain.log"; fail "plain query line"; }
if grep -qE '^<[0-9]>' "$work/plain.log"; then fail "a prefix although stderr is not the journal"; fi
echo "terminal: no prefixes"

# 3. JSON query lines with a hostile name: a quote, a backslash, a control byte, a high byte.
QNAME='q\"u\\o\009te\255.example.' QUERY_MARK='"name"' \
  run_daemon "$work/json.log" 1:1 --log-queries=json
grep '^{' "$work/json.log" >"$work/json.lines" || { cat "$work/json.log"; fail "no JSON lines"; }
python3 - "$work/json.lines" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
want = 'q\\"u\\\\o\\009te\\255.example.'
hits = [r for r in rows if r.get("name") == want]
assert hits, f"no row for the hostile name in {rows}"
r = hits[0]
assert r["type"] == "A" and r["rcode"] == "NOERROR" and r["answer"] in ("miss", "hit"), r
assert isinstance(r["ms"], float), r
# Its own wall-clock time (RFC 3339 UTC, ms) and the client (dig, from 127.0.0.1).
import datetime, re
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]), r
t = datetime.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
age = abs((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds())
assert age < 600, f"time {r['time']} is {age} s from now"
assert re.fullmatch(r"127\.0\.0\.1:\d+", r["client"]), r
print(f"json: {len(rows)} lines parse; hostile name logged as {r['name']}")
PY
echo "journal ok"
