package runner

import (
	"fmt"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/udpgen"
)

// LoadListens lists the sockets the runner's own load servers open on
// side b, each for the test that starts it, and always on b's address of
// the path (the tunnel's address; native's is the underlay address):
// docs/ssh.md, "Ports a run opens", shows them. Program names the tool
// and, after a colon, the tests.
func LoadListens() []method.Listen {
	l := func(proto string, port int, program string) method.Listen {
		return method.Listen{Side: "b", Proto: proto, Port: port, Addr: method.ListenOverlay, Program: program}
	}
	return []method.Listen{
		l("tcp", iperf3Port, "iperf3 -s -B: tcp_stream, mtu_probe"),
		l("tcp", loadPort, "iperf3 -s -B: latency_under_load"),
		l("tcp", parallelBasePort, fmt.Sprintf("iperf3 -s -B: parallel (process i on %d+i)", parallelBasePort)),
		l("tcp", load.RRDefaultPort, "tunbench rr server --addr: tcp_rr, latency_under_load"),
		l("tcp", sockperfPort, "sockperf server -i: tcp_rr with latency_tool sockperf"),
		l("udp", udpgen.DefaultPort, "tunbench udpgen recv --addr: udp_sizes"),
		l("udp", echoPort, "tunbench rr echo --addr (--addr-from-stdin before the set-up): connect, recover"),
	}
}
