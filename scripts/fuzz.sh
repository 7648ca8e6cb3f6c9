#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s),
# one after the other (go test -fuzz takes one target at a time). A crasher
# fails the run and is left in the package's testdata/fuzz/<target>/,
# where it becomes a regression test of the plain "go test".
#   scripts/fuzz.sh            30 s each (CI)
#   FUZZTIME=10m scripts/fuzz.sh
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
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    start=$(date +%s)
    dir=$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$target
    before=$(count_files "$dir")
    # Minimising a new interesting input may take up to a minute by
    # default, past a short -fuzztime: bound it.
    if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s "$pkg" 2>&1); then
      execs=$(printf '%s\n' "$out" | sed -n 's/.*execs: \([0-9]*\).*/\1/p' | tail -1)
      echo "fuzz: ${pkg#github.com/tunbench/tunbench/} $target: ok, ${execs:-?} execs in $(( $(date +%s) - start ))s"
    elif [ "$(count_files "$dir")" -eq "$before" ] &&
      printf '%s\n' "$out" | grep -q '^    context deadline exceeded$' &&
      ! printf '%s\n' "$out" | grep -qE 'panic|Failing input|hung'; then
      # Go 1.26's fuzz coordinator can report its own -fuzztime deadline
      # as a failure (go.dev/issue/75804, fixed in Go 1.27): no failing
      # input was written, so nothing failed.
      echo "fuzz: ${pkg#github.com/tunbench/tunbench/} $target: ok, stopped by the fuzztime deadline race of go.dev/issue/75804 (no failing input)"
    else
      echo "fuzz: ${pkg#github.com/tunbench/tunbench/} $target: FAILED"
      printf '%s\n' "$out" | grep -v '^fuzz: elapsed' | tail -30
      status=1
    fi
  done
done
exit $status
