#!/usr/bin/env bash
# The generated bash completions: sourced into bash, asked to complete a few command lines
# the way bash does (COMP_WORDS, COMP_CWORD, the function `complete` registered), and every
# flag of hourglassd --help offered after "--".
#
# usage: completion_test.sh COMPLETION_DIR HOURGLASSD
set -euo pipefail
dir=$1 daemon=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for f in hourglassd hourglass-ctl hourglass-rehearse; do
  # shellcheck disable=SC1090
  source "$dir/$f"
done
touch "$work/site.toml" "$work/trace.dnstap"

complete_line() {  # complete_line WORD...: the candidates for the last word, sorted, one a line
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMP_LINE="$*"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  local fn
  fn=$(complete -p "$1" | sed -E 's/.*-F ([^ ]+) .*/\1/')
  "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]:-}"
  printf '%s\n' "${COMPREPLY[@]}" | sort
}
expect() {  # expect "CANDIDATES" WORD...
  local want=$1 got
  shift
  got=$(complete_line "$@" | paste -sd' ')
  [[ $got == "$want" ]] || fail "completing '$*': got '$got', expected '$want'"
  echo "'$*' -> $got"
}
expect_has() {  # expect_has CANDIDATE WORD...
  local want=$1
  shift
  complete_line "$@" | grep -qxF -- "$want" || fail "completing '$*' does not offer $want"
  echo "'$*' offers $want"
}

expect "--listen" hourglassd --lis
expect "--log-queries" hourglassd --log-q
expect "$work/site.toml" hourglassd --config "$work/si"
expect "" hourglassd --listen 127
# Values that are not files: nothing offered (an address, a number, a user name).
expect "" hourglassd --upstream "$work/si"
expect "" hourglassd --redis "$work/si"
expect "" hourglassd --cache-save-interval "$work/si"
expect "" hourglassd --redis-user "$work/si"
expect "$work/trace.dnstap" hourglassd --dnstap "$work/tr"
expect "flush flush-zone" hourglass-ctl fl
expect "stats" hourglass-ctl --socket /run/x st
expect "--interval --names --once" hourglass-ctl top --
expect "--undo" hourglass-ctl use-as-system-resolver --un
expect "link links" hourglass-ctl lin
expect "--default-route --dns --domain --revert" hourglass-ctl link tun0 --
expect "$work/site.toml" hourglass-ctl --socket "$work/si"
expect "replay report" hourglass-rehearse rep
expect "replay" hourglass-rehearse repl
expect "--schedule" hourglass-rehearse replay --sch
expect "--target-ttl" hourglass-rehearse plan --tar
expect "$work/trace.dnstap" hourglass-rehearse replay "$work/tr"
expect "$work/trace.dnstap" hourglass-rehearse inspect --skip-bad "$work/tr"
n=0
while read -r f; do
  expect_has "$f" hourglassd -- >/dev/null
  n=$((n + 1))
done < <("$daemon" --help | grep -oE '^ +(-[a-z], ?)?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+')
((n > 10)) || fail "only $n flags in hourglassd --help"
echo "all $n flags of hourglassd --help are offered after --"
echo "completion ok"
