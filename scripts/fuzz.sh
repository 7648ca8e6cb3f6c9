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
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    start=$(date +%s)
    if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
      execs=$(printf '%s\n' "$out" | sed -n 's/.*execs: \([0-9]*\).*/\1/p' | tail -1)
      echo "fuzz: ${pkg#github.com/tunbench/tunbench/} $target: ok, ${execs:-?} execs in $(( $(date +%s) - start ))s"
    else
      echo "fuzz: ${pkg#github.com/tunbench/tunbench/} $target: FAILED"
      printf '%s\n' "$out" | grep -v '^fuzz: elapsed' | tail -30
      status=1
    fi
  done
done
exit $status
