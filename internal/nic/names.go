package nic

import (
	"fmt"
	"sort"
	"strings"
)

// legacyFlag is one entry of ethtool's off_flag_def table (common.c): the
// flags of `ethtool -K` from before netdev features had names, and the
// pattern (at most one '*') of the kernel features each stands for.
type legacyFlag struct {
	short, long, pattern string
}

// legacyFlags is in ethtool's order, which is also the order of its output.
var legacyFlags = []legacyFlag{
	{"rx", "rx-checksumming", "rx-checksum"},
	{"tx", "tx-checksumming", "tx-checksum-*"},
	{"sg", "scatter-gather", "tx-scatter-gather*"},
	{"tso", "tcp-segmentation-offload", "tx-tcp*-segmentation"},
	{"ufo", "udp-fragmentation-offload", "tx-udp-fragmentation"},
	{"gso", "generic-segmentation-offload", "tx-generic-segmentation"},
	{"gro", "generic-receive-offload", "rx-gro"},
	{"lro", "large-receive-offload", "rx-lro"},
	{"rxvlan", "rx-vlan-offload", "rx-vlan-hw-parse"},
	{"txvlan", "tx-vlan-offload", "tx-vlan-hw-insert"},
	{"ntuple", "ntuple-filters", "rx-ntuple-filter"},
	{"rxhash", "receive-hashing", "rx-hashing"},
}

// ufoFlag is skipped when printing: no kernel with the netlink interface
// supports UDP fragmentation offload, and ethtool does not print it.
const ufoFlag = "udp-fragmentation-offload"

// patternMatch matches name against a pattern with at most one '*', as
// ethtool's flag_pattern_match does.
func patternMatch(name, pattern string) bool {
	prefix, suffix, ok := strings.Cut(pattern, "*")
	if !ok {
		return name == pattern
	}
	return len(name) >= len(prefix)+len(suffix) &&
		strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix)
}

// group is a legacy flag with other than exactly one member: ethtool prints
// it as an aggregate line, on when any member is on.
type group struct {
	name    string
	members []int
}

// view maps kernel feature bits to the lines of `ethtool -k`.
type view struct {
	kernel  []string // kernel feature name per bit ("" if unnamed)
	display []string // name of the bit's line in `ethtool -k` ("" if none)
	groups  []group
}

// newView builds the mapping for the kernel's feature names, following
// ethtool's dump_features: each named feature belongs to the first legacy
// flag whose pattern matches it; a flag with exactly one member shows that
// member under the flag's long name; any other flag shows an aggregate line
// and its members under their kernel names; unmatched features show under
// their kernel names.
func newView(kernel []string) view {
	v := view{kernel: kernel, display: make([]string, len(kernel))}
	flagOf := make([]int, len(kernel))
	members := make([][]int, len(legacyFlags))
	for i, name := range kernel {
		flagOf[i] = -1
		if name == "" {
			continue
		}
		for j, f := range legacyFlags {
			if patternMatch(name, f.pattern) {
				flagOf[i] = j
				members[j] = append(members[j], i)
				break
			}
		}
		if flagOf[i] < 0 {
			v.display[i] = name
		}
	}
	for j, f := range legacyFlags {
		if f.long == ufoFlag {
			continue
		}
		if len(members[j]) == 1 {
			v.display[members[j][0]] = f.long
			continue
		}
		v.groups = append(v.groups, group{name: f.long, members: members[j]})
		for _, i := range members[j] {
			v.display[i] = kernel[i]
		}
	}
	return v
}

// render returns the `ethtool -k` view of the active bitset: one entry per
// line ethtool prints, true for "on".
func (v view) render(active bitset) map[string]bool {
	out := make(map[string]bool, len(v.kernel)+len(v.groups))
	for i, name := range v.display {
		if name != "" {
			out[name] = active.isSet(i)
		}
	}
	for _, g := range v.groups {
		on := false
		for _, i := range g.members {
			on = on || active.isSet(i)
		}
		out[g.name] = on
	}
	return out
}

// resolve turns requested names into kernel feature bits. A name may be an
// `ethtool -k` line name, a kernel feature name, or a legacy short name as
// `ethtool -K` accepts ("tso", "gso", "gro"); a legacy flag stands for all
// its member features. Unknown names and contradicting requests are errors.
func (v view) resolve(want map[string]bool) (map[int]bool, error) {
	bits := map[int]bool{}
	from := map[int]string{}
	add := func(i int, on bool, name string) error {
		if prev, ok := bits[i]; ok && prev != on {
			return fmt.Errorf("features %q and %q request opposite values for %s", from[i], name, v.kernel[i])
		}
		bits[i] = on
		from[i] = name
		return nil
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		on := want[name]
		matched := false
		for _, f := range legacyFlags {
			if name != f.short && name != f.long {
				continue
			}
			for i, k := range v.kernel {
				if k != "" && patternMatch(k, f.pattern) {
					matched = true
					if err := add(i, on, name); err != nil {
						return nil, err
					}
				}
			}
		}
		for i, k := range v.kernel {
			if k != "" && k == name {
				matched = true
				if err := add(i, on, name); err != nil {
					return nil, err
				}
			}
		}
		if !matched {
			return nil, fmt.Errorf("unknown feature %q", name)
		}
	}
	return bits, nil
}
