// Package localns is the local testbed: for each cell, two fresh network
// namespaces on this machine joined by a veth pair, built through
// netlink (NewLocal, LocalTestbed). Endpoint "a" sends, endpoint "b"
// receives. The namespaces are named "tunbench-<id>-a" and
// "tunbench-<id>-b", the devices inside them start with "tb<id>", and
// the run's private directory is <root>/<id> (by default
// /run/tunbench/<id>, mode 0700); a live run holds its lock
// (testbed.LockDir/<id>.lock). Clean finds what killed runs left on this
// machine by those names and touches nothing else.
//
// A Local is not safe for concurrent Setup/Close; Endpoint methods that
// run commands may be used concurrently.
package localns
