#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s),
# one after the other (go test -fuzz takes one target at a time). A crasher
# fails the run and is left in the package's testdata/fuzz/<target>/,
# where it becomes a regression test of the plain "go test".
#   scripts/fuzz.sh            30 s each (CI)
#   FUZZTIME=10m scripts/fuzz.sh
# make test runs it beside the test step (docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-30s}
status=0
# count_files prints how many files dir holds (0 when it does not exist).
count_files() {
  local files=()
  [ -d "$1" ] && files=("$1"/*)
  echo "${#files[@]}"
}
# The targets are read from the test files go test compiles for each
# package (go list applies the build constraints): every
# "func FuzzXxx(f *testing.F)". Asking go test -list instead builds and
# links every package's test binary first, minutes on this machine.
targets=$(go list -f '{{$d := .Dir}}{{range .TestGoFiles}}{{$d}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$d}}/{{.}} {{end}}' ./... |
  xargs -r grep -H '^func Fuzz[A-Za-z0-9_]*([A-Za-z0-9_]* \*testing\.F)' |
  sed 's|^\(.*\)/[^/]*:func \(Fuzz[A-Za-z0-9_]*\)(.*|\1 \2|' | sort -u) || true
if [ -z "$targets" ]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi
root=$(pwd)
while read -r dir target; do
  pkg=./${dir#"$root"/}
  start=$(date +%s)
  corpus=$dir/testdata/fuzz/$target
  before=$(count_files "$corpus")
  # Minimising a new interesting input may take up to a minute by
  # default, past a short -fuzztime: bound it.
  if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s "$pkg" 2>&1 </dev/null); then
    execs=$(printf '%s\n' "$out" | sed -n 's/.*execs: \([0-9]*\).*/\1/p' | tail -1)
    echo "fuzz: ${pkg#./} $target: ok, ${execs:-?} execs in $(( $(date +%s) - start ))s"
  elif [ "$(count_files "$corpus")" -eq "$before" ] &&
    printf '%s\n' "$out" | grep -q '^    context deadline exceeded$' &&
    ! printf '%s\n' "$out" | grep -qE 'panic|Failing input|hung'; then
    # Go 1.26's fuzz coordinator can report its own -fuzztime deadline
    # as a failure (go.dev/issue/75804, fixed in Go 1.27): no failing
    # input was written, so nothing failed.
    echo "fuzz: ${pkg#./} $target: ok, stopped by the fuzztime deadline race of go.dev/issue/75804 (no failing input)"
  else
    echo "fuzz: ${pkg#./} $target: FAILED"
    printf '%s\n' "$out" | grep -v '^fuzz: elapsed' | tail -30
    status=1
  fi
done <<<"$targets"
exit $status
