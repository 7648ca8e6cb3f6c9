// Package testbed provides the places where the two endpoints of a
// measurement live and runs commands there.
//
// The Local testbed, the default, is two network namespaces joined by a veth
// pair, built through netlink. Endpoint "a" sends, endpoint "b" receives.
// Everything a run creates carries the run's prefix: namespaces are named
// "tunbench-<id>-a" and "tunbench-<id>-b", devices inside them start with
// "tb<id>", and the run's private directory is <root>/<id> (by default
// /run/tunbench/<id>, mode 0700). Cleanup finds leftovers of killed runs by
// those names and touches nothing else; a live run holds a lock
// (LockDir/<id>.lock) so that a concurrent cleanup leaves it alone.
//
// A Local is not safe for concurrent Setup/Close; Endpoint methods that run
// commands may be used concurrently.
package testbed
