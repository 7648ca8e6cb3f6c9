// Package nic reads and sets the features (offloads) and MTU of network
// devices inside any network namespace, without running ethtool or ip.
//
// Features are named and grouped exactly as `ethtool -k DEV` prints them:
// a feature that is the only member of one of ethtool's legacy flags appears
// under the legacy long name ("generic-segmentation-offload" for the kernel's
// "tx-generic-segmentation", "generic-receive-offload" for "rx-gro"); a
// legacy flag with several members appears as an aggregate that is on when
// any member is on ("tcp-segmentation-offload") next to its members
// ("tx-tcp-segmentation", "tx-tcp6-segmentation", ...); every other feature
// keeps its kernel name ("rx-gro-list", "tx-udp-segmentation"). The map
// returned by Features therefore has one entry per line of `ethtool -k`.
//
// The data comes from the kernel's ethtool generic netlink family
// (ETHTOOL_MSG_FEATURES_GET / _SET with verbose bitsets, feature names from
// ETHTOOL_MSG_STRSET_GET), so this package needs Linux 5.6 or newer. Kind
// and MTU come from rtnetlink. The netlink sockets are created inside the
// namespace given by a netns.NsHandle (netns.None() means the namespace of
// the calling thread); the caller's thread is never moved.
//
// Setting is verified: SetFeatures re-reads the device and returns a
// *FeatureError for every feature whose active state differs from the
// request, for example because the driver fixes it.
//
// All functions are safe for concurrent use; each call opens and closes
// its own sockets. Reading needs no privilege; setting needs CAP_NET_ADMIN
// in the namespace.
package nic
