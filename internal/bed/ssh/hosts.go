package ssh

import (
	"net/netip"

	"github.com/tunbench/tunbench/internal/scenario"
)

// SectionKey is the scenario's key of the ssh testbed's section.
const SectionKey = "ssh"

// Section is the scenario's ssh section: the hosts reached over SSH, its
// sites, and which ordered pairs of them to measure.
//
//	testbed: ssh
//	ssh:
//	  known_hosts: ~/.ssh/known_hosts   # the default
//	  sites:
//	    - name: fra
//	      address: 192.0.2.10            # where sshd listens
//	      user: root                     # the default
//	      identity: ~/.ssh/id_ed25519    # empty: ssh-agent, then ~/.ssh/id_*
//	      dev: eth1                      # the underlay device to measure over
//	      ipv4: 10.0.0.1/24              # its address, as configured
//	    - name: nyc
//	      ...
//	  pairs: [[fra, nyc]]                # empty: every ordered pair
//	  host_changes: true                 # let mtus and offloads change dev
type Section struct {
	// KnownHosts is the known_hosts file host keys are checked against;
	// empty means ~/.ssh/known_hosts. There is no way to skip the check.
	KnownHosts string `yaml:"known_hosts,omitempty" json:"known_hosts,omitempty"`
	// Binary is the path of tunbench already installed on every host;
	// empty copies this tunbench to Dir on each host.
	Binary string `yaml:"binary,omitempty" json:"binary,omitempty"`
	// Dir is where tunbench is copied on the hosts (default
	// /var/tmp/tunbench).
	Dir   string     `yaml:"dir,omitempty" json:"dir,omitempty"`
	Sites []Site     `yaml:"sites" json:"sites"`
	Pairs [][]string `yaml:"pairs,omitempty" json:"pairs,omitempty"`
	// HostChanges lets a run change every site's underlay device per
	// cell, as the local testbed does: its MTU (mtus) and its offload
	// features (offloads). Each host's original state is journaled on
	// the host first and put back after every cell, at the end of the
	// run, and by "tunbench clean --testbed ssh" after a crash. A site's
	// own host_changes overrides it.
	HostChanges bool `yaml:"host_changes,omitempty" json:"host_changes,omitempty"`
}

// Site is one host of the ssh testbed.
type Site struct {
	Name     string `yaml:"name" json:"name"`
	Address  string `yaml:"address" json:"address"`
	Port     int    `yaml:"port,omitempty" json:"port,omitempty"`
	User     string `yaml:"user,omitempty" json:"user,omitempty"`
	Identity string `yaml:"identity,omitempty" json:"identity,omitempty"`
	// Dev is the underlay device; IPv4 and IPv6 its addresses (with
	// prefix length) as already configured on the host. tunbench touches
	// no other device and no other address, and never the default route.
	Dev  string `yaml:"dev" json:"dev"`
	IPv4 string `yaml:"ipv4,omitempty" json:"ipv4,omitempty"`
	IPv6 string `yaml:"ipv6,omitempty" json:"ipv6,omitempty"`
	// HostChanges, when set, says for this site what Section.HostChanges
	// says for all.
	HostChanges *bool `yaml:"host_changes,omitempty" json:"host_changes,omitempty"`
	// ControlOverDev lets host changes go ahead although the SSH
	// connection to this host runs over Dev: tunbench then raises the
	// MTU before anything else, checks after each change that the host
	// still answers, and puts the device back at once when it does not.
	ControlOverDev bool `yaml:"control_over_dev,omitempty" json:"control_over_dev,omitempty"`
}

// DefaultDir is where tunbench is copied on the hosts.
const DefaultDir = "/var/tmp/tunbench"

// pairs are the ordered pairs (sender, receiver) a scenario on the ssh
// testbed measures: its pairs, or every ordered pair of sites.
func pairs(s scenario.Scenario) [][2]string {
	x, err := FromScenario(s)
	if err != nil || x == nil {
		return nil
	}
	var names []string
	for _, st := range x.Sites {
		names = append(names, st.Name)
	}
	return scenario.OrderedPairs(names, x.Pairs)
}

// FromScenario returns the scenario's ssh section, decoded (nil when it
// has none); validation has refused one that does not decode.
func FromScenario(s scenario.Scenario) (*Section, error) {
	sec := s.Section(SectionKey)
	if sec == nil {
		return nil, nil
	}
	var x Section
	if err := sec.Decode(&x); err != nil {
		return nil, err
	}
	return &x, nil
}

// With returns s with x as its ssh section (tests build scenarios so).
func With(s scenario.Scenario, x *Section) scenario.Scenario {
	out, err := s.WithSection(SectionKey, x)
	if err != nil {
		panic(err) // a Section always encodes
	}
	return out
}

// Site returns the site called name.
func (s *Section) Site(name string) (Site, bool) {
	for _, st := range s.Sites {
		if st.Name == name {
			return st, true
		}
	}
	return Site{}, false
}

// ChangesHost reports whether a run may change the underlay device of
// site name (host_changes, the site's own or the scenario's).
func (s *Section) ChangesHost(name string) bool {
	st, ok := s.Site(name)
	if !ok {
		return false
	}
	if st.HostChanges != nil {
		return *st.HostChanges
	}
	return s.HostChanges
}

// Prefix returns the site's underlay address of family ("ipv4", "ipv6").
func (st Site) Prefix(family string) (netip.Prefix, error) {
	v := st.IPv4
	if family == "ipv6" {
		v = st.IPv6
	}
	return netip.ParsePrefix(v)
}
