#!/bin/sh
# capture.sh regenerates the real tool output that the parsers in
# internal/load are tested on. Run it as root on the project machine:
#
#	sh internal/load/testdata/capture.sh
#
# It builds two throwaway network namespaces joined by a veth pair
# (198.18.0.1/24 + 2001:2::1/64 and 198.18.0.2/24 + 2001:2::2/64), runs
# iperf3 and sockperf between them with the argv the Go builders produce
# (the "capture" cases of iperf3_test.go and sockperf_test.go), writes the
# outputs next to this script and removes everything it created on exit.
# Figures change on every run: after regenerating, update the wanted values
# in iperf3_parse_test.go and sockperf_parse_test.go (read them off the new
# files); the relations those tests check must hold unchanged.
set -eu

cd "$(dirname "$0")"
A=tbtest-cap-a-$$
B=tbtest-cap-b-$$
export LC_ALL=C
SERVER_PID=

cleanup() {
	if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
	rm -f ./*.csv.tmp
}
trap cleanup EXIT INT TERM

ip netns add "$A"
ip netns add "$B"
ip link add va netns "$A" type veth peer name vb netns "$B"
ip -n "$A" addr add 198.18.0.1/24 dev va
ip -n "$B" addr add 198.18.0.2/24 dev vb
ip -n "$A" addr add 2001:2::1/64 dev va nodad
ip -n "$B" addr add 2001:2::2/64 dev vb nodad
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set va up
ip -n "$B" link set vb up

inA() { ip netns exec "$A" "$@"; }
inB() { ip netns exec "$B" "$@"; }

# wait_listen PORT: wait until a TCP socket listens on PORT in namespace B.
wait_listen() {
	i=0
	while [ -z "$(inB ss -Hltn "sport = :$1")" ]; do
		i=$((i + 1))
		if [ "$i" -gt 100 ]; then echo "capture: nothing listens on port $1" >&2; exit 1; fi
		sleep 0.05
	done
}

# iperf3_run NAME SERVER_ADDR CLIENT_ARGS...: one-off server in B, client in A.
iperf3_run() {
	name=$1 addr=$2
	shift 2
	ip netns exec "$B" iperf3 -s -1 -B "$addr" -p 5201 -J >/dev/null 2>&1 &
	SERVER_PID=$!
	wait_listen 5201
	inA iperf3 "$@" >"$name" 2>"$name.stderr" || true
	wait "$SERVER_PID" || true
	SERVER_PID=
	if [ -s "$name.stderr" ]; then
		echo "capture: iperf3 wrote to stderr for $name:" >&2
		cat "$name.stderr" >&2
	fi
	rm -f "$name.stderr"
}

iperf3 --version >iperf3_version.txt 2>&1
sockperf --version >sockperf_version.txt 2>&1

iperf3_run iperf3_tcp4_omit.json 198.18.0.2 -c 198.18.0.2 -p 5201 -t 3 -O 1 -i 1 -J -4
iperf3_run iperf3_tcp4_bidir_mss1220.json 198.18.0.2 -c 198.18.0.2 -p 5201 -t 2 -i 1 -J -4 --bidir -M 1220
iperf3_run iperf3_tcp4_p4.json 198.18.0.2 -c 198.18.0.2 -p 5201 -t 2 -O 1 -P 4 -i 1 -J -4
iperf3_run iperf3_tcp6.json 2001:2::2 -c 2001:2::2 -p 5201 -t 2 -i 1 -J -6
iperf3_run iperf3_tcp4_reverse.json 198.18.0.2 -c 198.18.0.2 -p 5201 -t 2 -i 1 -J -4 -R
iperf3_run iperf3_udp4.json 198.18.0.2 -c 198.18.0.2 -p 5201 -t 2 -i 1 -J -4 -u -b 200M

# Connection refused: nothing listens on 5299. iperf3 3.12 exits 0 here.
inA iperf3 -c 198.18.0.2 -p 5299 -t 2 -i 1 -J -4 >iperf3_refused.json 2>&1 || true

# Truncated: what a reader sees when iperf3 dies while writing its report.
size=$(wc -c <iperf3_tcp4_p4.json)
head -c $((size / 2)) iperf3_tcp4_p4.json >iperf3_truncated.json

# sockperf 3.7: TCP ping-pong. The server runs until killed.
# Not through inB: $! must be sockperf itself (ip netns exec execs it), or
# killing it would leave the server running.
ip netns exec "$B" sockperf server -i 198.18.0.2 -p 11111 --tcp >/dev/null 2>&1 &
SERVER_PID=$!
wait_listen 11111

# Tight request/response loop, full round-trip times; the full log is big
# (one line per request), so it is stored gzipped.
inA sockperf ping-pong -i 198.18.0.2 -p 11111 --tcp -t 2 --mps max --full-rtt \
	--full-log sockperf_pp_tcp_rtt.csv.tmp >sockperf_pp_tcp_rtt.txt 2>&1
gzip -9 -n -c sockperf_pp_tcp_rtt.csv.tmp >sockperf_pp_tcp_rtt.csv.gz

# Without --full-rtt sockperf reports one-way latency (RTT/2). Rate-limited
# to 1000 requests/s to keep the file small.
inA sockperf ping-pong -i 198.18.0.2 -p 11111 --tcp -t 2 --mps 1000 \
	--full-log sockperf_pp_tcp_latency.csv >sockperf_pp_tcp_latency.txt 2>&1

# --no-rdtsc makes sockperf 3.7 discard every sample on this machine.
inA sockperf ping-pong -i 198.18.0.2 -p 11111 --tcp -t 1 --mps max --full-rtt \
	--no-rdtsc >sockperf_pp_no_rdtsc.txt 2>&1

kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=

# Nothing listens on 11199. sockperf 3.7 exits 0 and leaves an empty log.
inA sockperf ping-pong -i 198.18.0.2 -p 11199 --tcp -t 2 --mps max --full-rtt \
	--full-log sockperf_pp_refused.csv >sockperf_pp_refused.txt 2>&1 || true

# sockperf 3.7 has no IPv6: it rejects the address and prints its usage.
inA sockperf ping-pong -i 2001:2::2 -p 11111 --tcp -t 1 --mps max --full-rtt \
	>sockperf_pp_ipv6.txt 2>&1 || true

echo "capture: done" >&2
