#!/bin/sh
# harness-cpu.sh: the CPU tunbench's own process uses while a cell of the
# parallel test runs STREAMS streams (default 512), as a share of one core,
# next to the machine's busy share. Run as root from the repository:
#   scripts/harness-cpu.sh [STREAMS] [STREAMS_PER_PROCESS]
# It builds tunbench, starts one cell (native, 20 s), waits until the first
# iperf3 client runs, reads /proc/PID/stat of tunbench twice 10 s apart, and
# prints the harness's CPU per wall second; then it waits for the cell and
# prints its summary line.
set -eu
streams=${1:-512}
spp=${2:-128}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/tunbench" ./cmd/tunbench
"$dir/tunbench" run --db "$dir/r.db" --methods native --tests parallel --streams "$streams" --streams-per-process "$spp" \
	--duration 20s --omit 2s --latency 0s --reps 1 --quiet 2>"$dir/err" >"$dir/out" &
# The shell's child is tunbench itself.
pid=$!
i=0
until pgrep -f "iperf3 -c .* -p 5301" >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -lt 600 ] || { echo "no iperf3 client after 60 s" >&2; cat "$dir/err" >&2; exit 1; }
	sleep 0.1
done
sleep 3 # past the warm-up and the client starts
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
c0=$(cpu); set -- $(busy); b0=$1; t0=$2
sleep 10
c1=$(cpu); set -- $(busy); b1=$1; t1=$2
echo "harness (tunbench pid $pid) CPU: $(echo "$c0 $c1 $ticks" | awk '{printf "%.2f%% of one core", ($2-$1)/$3/10*100}')"
echo "machine busy: $(echo "$b0 $b1 $t0 $t1" | awk '{printf "%.1f%%", ($2-$1)/($4-$3)*100}')"
echo "iperf3 processes: $(pgrep -c iperf3)"
wait "$pid" || { echo "tunbench failed:" >&2; cat "$dir/err" "$dir/out" >&2; exit 1; }
grep -A3 '^parallel' "$dir/out" || cat "$dir/out"
