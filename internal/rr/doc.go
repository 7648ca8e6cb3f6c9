// Package rr is tunbench's own request/response latency tool, with the
// semantics of netperf TCP_RR: over one TCP connection the client sends a
// request of RequestSize bytes, the server answers with ResponseSize bytes,
// and the client records the round-trip time of each transaction, one
// transaction in flight at a time, back to back, for Duration after an
// unrecorded warm-up.
//
// It exists because sockperf 3.7 has no IPv6 and sleeps about 2 s before
// every test, and netperf is not installable here. Both ends are written to
// add as little as Go can to the round trip: blocking sockets driven by raw
// read(2)/write(2) calls (golang.org/x/sys/unix, TCP_NODELAY) on a
// goroutine locked to its OS thread, the monotonic clock read through the
// vDSO, and no allocation per transaction: samples go to a preallocated,
// pre-faulted []int64 of nanoseconds.
//
// The wire protocol is a 12-byte hello from the client ("TBR1", request
// size and response size as big-endian uint32), a 4-byte "TBOK" from the
// server, then the transactions. The client ends the test by closing the
// connection.
//
// Main is the command line ("tunbench rr server|client ..."), which the
// runner executes inside a network namespace; the client prints its Report
// as one JSON object, which load.ParseRR reads. Linux only.
package rr
