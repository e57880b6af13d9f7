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
mapfile -t commands < <(awk '/^  [a-z]/ {print $1}' "$work/rehearse.help")
for cmd in "${commands[@]}"; do
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
# What SIGHUP re-reads: the options whose --help says so are the truth; the man page's
# SIGNALS section, the shipped hourglass.toml and the README's reload sentence each name
# exactly those keys.
src=$(cd "$(dirname "$0")/../.." && pwd)
awk '/^  --/ {if (o) print o; o = $0; next} /^   / {o = o " " $0} END {if (o) print o}' \
  "$work/hourglassd.help" | grep SIGHUP | grep -oE '^  --[a-z0-9-]+' | sed 's/^  --//' |
  sort -u >"$work/sighup-keys"
(($(wc -l <"$work/sighup-keys") >= 5)) || fail "only $(wc -l <"$work/sighup-keys") options say SIGHUP"
sed -n '/^SIGNALS/,/^[A-Z]/p' "$work/hourglassd.txt" | tr -s ' \n' ' ' |
  sed -E 's/.*(SIGHUP re-reads.*)SIGTERM.*/\1/' >"$work/signals"
sed -n '/SIGHUP/,/^$/p' "$src/packaging/hourglass.toml" | tr -s ' \n#' ' ' >"$work/toml-reload"
grep -A3 'systemctl reload hourglassd` sends SIGHUP' "$src/README.md" | tr -s ' \n' ' ' |
  sed -E 's/(.*takes a restart\.).*/\1/' >"$work/readme-reload"
keys_in() {  # the config keys a text names (as words)
  grep -owE "$(paste -sd'|' "$work/keys")" "$1" | sort -u || true
}
for doc in signals toml-reload readme-reload; do
  [[ -s $work/$doc ]] || fail "$doc: no SIGHUP sentence found"
  keys_in "$work/$doc" | grep -vxE 'config' >"$work/$doc.keys"
  diff -u "$work/sighup-keys" "$work/$doc.keys" >"$work/$doc.diff" ||
    { cat "$work/$doc.diff"; fail "$doc names other keys than the options whose --help says SIGHUP"; }
done
echo "SIGHUP: man page, hourglass.toml and README name the same $(wc -l <"$work/sighup-keys") keys as --help"
echo "docs ok"
