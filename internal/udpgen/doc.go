// Package udpgen is tunbench's timestamped UDP load generator, run inside
// the testbed as "tunbench udpgen send|recv" (like package rr for latency).
//
// The sender writes datagrams of a fixed payload size on a connected UDP
// socket, either as fast as it can or paced to an offered rate, each
// carrying a 20-byte header: a magic number, a sequence number and the
// wall-clock send time in nanoseconds. The receiver reads them and
// accumulates, without storing the packets: packets and bytes received,
// one-way delay (min, p50, p99, max from a 1 µs-resolution histogram),
// RFC 3550 interarrival jitter and out-of-order arrivals. Loss is the
// sender's count minus the receiver's, computed by the caller, because
// only the sender knows what it sent.
//
// Each side asks for a 4 MiB socket buffer (BufferBytes, as iperf3 -w 4M)
// and reports what the kernel granted, read back, so that a buffer capped
// by net.core.wmem_max or rmem_max (no CAP_NET_ADMIN) is on the record
// rather than silently measured (ShortBuffer).
//
// One-way delay is exact only when both ends read the same clock, which
// they do on the local testbed (two namespaces of one kernel). Stats and
// the header codec are pure and tested on crafted traces; the socket loops
// are tested between two real namespaces.
package udpgen
