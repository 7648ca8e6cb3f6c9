#!/usr/bin/env bash
# make test (README.md; docs/development.md, "How long make test takes"):
# install what the tests need, then run the tests, and beside them lint,
# the Kubernetes binaries' build, the fresh-machine guard and every fuzz
# target; print each one's report, then where the time went (each phase's
# start, end and length), and fail, saying which, when any of them fails.
#
# The tests are the floor of make test (the kernel lab's TestKernelLab
# above all: a software-emulated guest), so they start as soon as the
# install step is done, and everything else runs beside them:
#   - lint (gofmt, go vet, staticcheck) and the Kubernetes binaries
#     (scripts/k8s-binaries.sh: seconds with Go's build cache warm, about
#     12 minutes on a fresh machine; the kubernetes tests wait for it on
#     its file lock) at nice 5, so the tests' own builds and the lab's
#     guest go first;
#   - the fresh-machine guard (scripts/fresh-check.sh) and each fuzz target
#     for 30 s (scripts/fuzz.sh) at nice 15, below the tests (nice 0 and
#     5), so that they take only what the tests leave.
# The tests run in strict mode (TUNBENCH_STRICT=1: a test that would skip
# for something this script provides fails instead) and through
# scripts/skips, which lists every skipped test, the slowest packages and
# tests (the kernel lab's with its guest's parts), and fails on a skip
# that no expected-skips file names. Four test packages run at once
# (-p 4): most wait on load tools, daemons and the kernel lab rather than
# on the CPU. go test starts packages in the order they are named, so the
# two longest (internal/method/registry with TestKernelLab, internal/cli)
# are named first. go test runs at nice 5, its compiles and every test
# binary but the registry's, which scripts/test-exec.sh (go test -exec)
# runs back at nice 0, so that the lab's guest gets the CPU it waits
# for. TUNBENCH_LAB_RESERVE=1 keeps one of the two lab slots for that
# guest (TestKernelLab), which had waited two minutes behind the smaller
# packages' guests; they share the other.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TEST_PKGS=${TEST_PKGS:-./internal/method/registry ./internal/cli ./...}

t0=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# timed NAME COMMAND...: run COMMAND, keeping in $work/NAME.time its start
# and end (seconds since make test began) and its exit status.
timed() {
	local name=$1 start rc
	shift
	start=$(($(date +%s) - t0))
	"$@"
	rc=$?
	echo "$start $(($(date +%s) - t0)) $rc" >"$work/$name.time"
	return "$rc"
}

# beside NAME NICENESS COMMAND...: run COMMAND in the background, niced,
# its output into $work/NAME.log.
beside() {
	local name=$1 niceness=$2
	shift 2
	echo "nice -n $niceness $* (beside the tests; its report follows theirs)"
	timed "$name" nice -n "$niceness" "$@" >"$work/$name.log" 2>&1 &
	pids+=("$!")
	names+=("$name")
}

echo "./scripts/install.sh test"
if ! timed install ./scripts/install.sh test; then
	echo "make test: the install step failed"
	exit 1
fi

pids=()
names=()
beside lint 5 "${MAKE:-make}" --no-print-directory lint GO="$GO"
beside k8s-binaries 5 ./scripts/k8s-binaries.sh
beside fresh-check 15 ./scripts/fresh-check.sh
beside fuzz 15 env FUZZTIME=30s ./scripts/fuzz.sh

tests="TUNBENCH_STRICT=1 TUNBENCH_LAB_RESERVE=1 nice -n 5 $GO test -json -count=1 -p 4 -timeout 60m -exec $PWD/scripts/test-exec.sh $TEST_PKGS 2>&1 | $GO run ./scripts/skips"
echo "bash -o pipefail -c '$tests'"
timed tests bash -o pipefail -c "$tests"

status=0
failed=()
for i in "${!pids[@]}"; do
	wait "${pids[$i]}"
	echo
	echo "--- ${names[$i]} (beside the tests)"
	cat "$work/${names[$i]}.log"
done

# Where the time went: each phase's start and end in seconds since make
# test began (the phases beside the tests overlap them), and the total.
echo
echo "make test phases (seconds since it began; lint, k8s-binaries, fresh-check and fuzz ran beside the tests):"
for name in install tests "${names[@]}"; do
	read -r start end rc <"$work/$name.time"
	mark=ok
	if [ "$rc" -ne 0 ]; then
		mark="FAILED (exit status $rc)"
		failed+=("$name")
		status=1
	fi
	printf '  %-13s %5d -> %5d  %5d s  %s\n' "$name" "$start" "$end" $((end - start)) "$mark"
done
printf '  %-13s %5d s\n' total $(($(date +%s) - t0))

for name in "${failed[@]}"; do
	case $name in
	tests) echo "make test: the tests failed" ;;
	lint) echo "make test: lint failed (gofmt, go vet or staticcheck; its report is above)" ;;
	k8s-binaries) echo "make test: building the Kubernetes binaries failed (scripts/k8s-binaries.sh)" ;;
	fresh-check) echo "make test: the fresh-machine guard failed" ;;
	fuzz) echo "make test: fuzzing failed" ;;
	esac
done
exit "$status"
