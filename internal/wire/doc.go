// Package wire captures underlay packets in a testbed namespace and decodes
// them into plain facts, so that tests can check the wire format a method
// really produces: which outer family and protocol, which UDP ports, which
// VXLAN or Geneve VNI, GRE key and payload type, IP-in-IP, ESP SPI, NAT-T,
// WireGuard message types and SRv6 segment lists.
//
// Capturing: Start opens a pure-Go AF_PACKET socket (gopacket's pcapgo
// EthernetHandle; no libpcap) on a device inside an endpoint's namespace and
// reads in a goroutine until Stop. A capture is bounded: it keeps at most
// MaxPackets frames and SnapLen bytes of each, then stops reading, so it
// costs little CPU even under iperf3 load. It sees both directions.
//
// Decoding is pure: Decode turns the bytes of one Ethernet frame into a
// Frame, and Summarize does that for captured packets. Nothing in decoding
// touches the system, so its tests run anywhere on real frames saved in
// testdata/ as pcap files (WriteFile): VXLAN and SRv6 captured on the host
// ("go test -update" rewrites them), the kernel tunnels captured in the
// kernel lab by the method package's TestLab tests with
// TUNBENCH_WIRE_SAVE=<dir>.
//
// A Capture is safe to Stop from any goroutine, once; decoding functions
// are safe for concurrent use.
package wire
