// Package testbed is the core every testbed shares: the Endpoint that
// methods, load drivers and samplers work through, the Host it runs on
// (this machine, inside the endpoint's namespace, or another reached
// through a transport), the Pair of endpoints a cell runs between, the
// Testbed interface that builds pairs and the Spec a cell asks of them,
// the names and ids of what a run creates, its lock, and the journal of
// what a run changes on a host's own devices (Undo, HostDev), put back
// after any crash.
//
// Everything a run creates carries the run's id: namespaces are named
// "tunbench-<id>-a" and "tunbench-<id>-b", devices start with "tb<id>",
// and the run's private directory is <root>/<id> (by default
// /run/tunbench/<id>, mode 0700). A live run holds a lock
// (LockDir/<id>.lock) so that a concurrent cleanup leaves it alone.
//
// The transports live in sub-packages, which import this one: localns
// (two namespaces on this machine) and agent (a remote host's tunbench
// agent, over a byte stream).
package testbed
