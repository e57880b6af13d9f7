#!/usr/bin/env bash
# The generated man pages render without groff warnings (man -l), and every flag each
# program's --help prints (each hourglass-rehearse command's too) is in its man page; every
# config-file key (hourglassd's flags but --config, --check-config, --help, --version) is in
# hourglass.toml(5), and that page names no key hourglassd does not have.
#
# usage: docs_test.sh DOCS_DIR HOURGLASSD HOURGLASS_CTL HOURGLASS_REHEARSE
set -euo pipefail
docs=$1 daemon=$2 ctl=$3 rehearse=$4
export LC_ALL=C MANWIDTH=100 HG_REHEARSE_HUGEPAGES=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

render() {  # render PAGE.gz OUT: plain text; fails on any groff or man warning
  man --warnings -l "$1" 2>"$2.err" | col -b >"$2"
  [[ ! -s $2.err ]] || { cat "$2.err"; fail "$(basename "$1") renders with warnings"; }
  grep -q '^NAME' "$2" || fail "$(basename "$1") has no NAME section"
  echo "$(basename "$1"): $(wc -l <"$2") lines"
}
flags_of() {  # the --long and -s flags in a --help text
  grep -oE '(^|[ ,[])--?[A-Za-z0-9][A-Za-z0-9-]*' "$1" | sed -E 's/^[ ,[]//' |
    grep -vE '^-[0-9]' | sort -u
}
check() {  # check HELP_TEXT MAN_TEXT WHAT
  local f n=0
  while read -r f; do
    grep -qF -- "$f" "$2" || fail "$3: $f is in --help but not in the man page"
    n=$((n + 1))
  done < <(flags_of "$1")
  ((n > 0)) || fail "$3: no flags found in --help"
  echo "$3: all $n flags of --help are in the man page"
}

render "$docs/man/hourglassd.8.gz" "$work/hourglassd.txt"
render "$docs/man/hourglass-ctl.8.gz" "$work/ctl.txt"
render "$docs/man/hourglass-rehearse.1.gz" "$work/rehearse.txt"
render "$docs/man/hourglass.toml.5.gz" "$work/toml.txt"

"$daemon" --help >"$work/hourglassd.help"
check "$work/hourglassd.help" "$work/hourglassd.txt" hourglassd
"$ctl" --help >"$work/ctl.help"
check "$work/ctl.help" "$work/ctl.txt" hourglass-ctl
"$rehearse" --help >"$work/rehearse.help"
for cmd in $(awk '/^  [a-z]/ {print $1}' "$work/rehearse.help"); do
  grep -q "^ *$cmd" "$work/rehearse.txt" || fail "hourglass-rehearse: command $cmd not in the man page"
  "$rehearse" "$cmd" --help >"$work/rehearse-$cmd.help"
  check "$work/rehearse-$cmd.help" "$work/rehearse.txt" "hourglass-rehearse $cmd"
done

# hourglass.toml(5): the keys are hourglassd's flags without the command-line-only ones.
flags_of "$work/hourglassd.help" | grep '^--' | sed 's/^--//' |
  grep -vxE 'help|version|config|check-config' >"$work/keys"
n=0
while read -r k; do
  grep -qE "^ +$k = " "$work/toml.txt" || fail "hourglass.toml(5): key $k missing"
  n=$((n + 1))
done <"$work/keys"
grep -oE '^ {7}[a-z0-9-]+ = ' "$work/toml.txt" | sed -E 's/^ +//; s/ = $//' | sort -u >"$work/page-keys"
while read -r k; do
  grep -qx -- "$k" "$work/keys" || fail "hourglass.toml(5) lists $k, which hourglassd does not have"
done <"$work/page-keys"
echo "hourglass.toml(5): all $n keys, and no other"
echo "docs ok"
