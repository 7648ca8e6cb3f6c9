package scenario

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// SSH is the testbed of real hosts reached over SSH: its sites, and which
// ordered pairs of them to measure.
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
type SSH struct {
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
	// HostChanges, when set, says for this site what SSH.HostChanges
	// says for all.
	HostChanges *bool `yaml:"host_changes,omitempty" json:"host_changes,omitempty"`
	// ControlOverDev lets host changes go ahead although the SSH
	// connection to this host runs over Dev: tunbench then raises the
	// MTU before anything else, checks after each change that the host
	// still answers, and puts the device back at once when it does not.
	ControlOverDev bool `yaml:"control_over_dev,omitempty" json:"control_over_dev,omitempty"`
}

// DefaultSSHDir is where tunbench is copied on the hosts.
const DefaultSSHDir = "/var/tmp/tunbench"

var siteName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)

// SitePairs returns the ordered pairs (sender, receiver) the scenario
// measures: its pairs, or every ordered pair of sites.
// On testbed kubernetes the sites are the nodes.
func (s Scenario) SitePairs() [][2]string {
	var names []string
	var pairs [][]string
	switch {
	case s.Kubernetes != nil:
		for _, n := range s.Kubernetes.Nodes {
			names = append(names, n.Name)
		}
		pairs = s.Kubernetes.Pairs
	case s.SSH != nil:
		for _, st := range s.SSH.Sites {
			names = append(names, st.Name)
		}
		pairs = s.SSH.Pairs
	default:
		return nil
	}
	var out [][2]string
	if len(pairs) > 0 {
		for _, p := range pairs {
			if len(p) == 2 {
				out = append(out, [2]string{p[0], p[1]})
			}
		}
		return out
	}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				out = append(out, [2]string{a, b})
			}
		}
	}
	return out
}

// Site returns the site called name.
func (s *SSH) Site(name string) (Site, bool) {
	for _, st := range s.Sites {
		if st.Name == name {
			return st, true
		}
	}
	return Site{}, false
}

// ChangesHost reports whether a run may change the underlay device of
// site name (host_changes, the site's own or the scenario's).
func (s *SSH) ChangesHost(name string) bool {
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

func (s Scenario) validateSSH(c Catalog) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if s.SSH == nil || len(s.SSH.Sites) < 2 {
		bad("ssh.sites", "testbed ssh needs at least two sites, each with name, address, dev and its underlay address (see docs/ssh.md)")
		return errs
	}
	if s.Pin {
		bad("pin", "pinning splits one machine's CPUs between the sides; on testbed ssh each side has its own host: drop pin")
	}
	if len(s.WAN) > 0 {
		bad("wan", "testbed ssh measures the real network between the hosts and emulates none: drop wan")
	}
	var fixed []string // sites in a pair whose device stays as it is
	for _, p := range s.SitePairs() {
		for _, n := range p {
			if !s.SSH.ChangesHost(n) && !slices.Contains(fixed, n) {
				fixed = append(fixed, n)
			}
		}
	}
	if len(fixed) > 0 {
		for _, o := range s.Offloads {
			if o != "on" {
				bad("offloads", "%q: testbed ssh leaves the NIC settings of %s as they are unless ssh.host_changes is true (scenario-wide or for the site): set host_changes: true to let tunbench change and restore them per cell, or use offloads: [on]", o, strings.Join(fixed, ", "))
				break
			}
		}
	}
	// The addresses every site needs: one of each underlay family the
	// methods use for the measured families (srv6 needs IPv6 whatever
	// it carries).
	need, needBy := s.UnderlayFamilies(c)
	if len(need) == 0 {
		need = s.Families
	}
	names := map[string]bool{}
	for i, st := range s.SSH.Sites {
		f := fmt.Sprintf("ssh.sites[%d]", i)
		if !siteName.MatchString(st.Name) {
			bad(f+".name", "%q: use 1-32 lowercase letters, digits, '.', '_' or '-'", st.Name)
		}
		if names[st.Name] {
			bad(f+".name", "%q is listed twice: name each site once", st.Name)
		}
		names[st.Name] = true
		if st.Address == "" {
			bad(f+".address", "empty: give the address or DNS name where the host's sshd listens")
		}
		if st.Port < 0 || st.Port > 65535 {
			bad(f+".port", "%d: use 1-65535, or leave it out for 22", st.Port)
		}
		if st.Dev == "" {
			bad(f+".dev", "empty: name the underlay device to measure over (tunbench touches no other)")
		}
		if st.ControlOverDev && !s.SSH.ChangesHost(st.Name) {
			bad(f+".control_over_dev", "set, but the site's device is not changed (host_changes is off for it): drop control_over_dev or set host_changes: true")
		}
		for _, fam := range need {
			field, v := "ipv4", st.IPv4
			if fam == "ipv6" {
				field, v = "ipv6", st.IPv6
			}
			if v == "" {
				if slices.Contains(s.Families, fam) {
					bad(f+"."+field, "empty, but families lists %s: give the %s address of %s on this host, with its prefix length", fam, fam, st.Dev)
				} else {
					bad(f+"."+field, "empty, but %s runs over an %s underlay whatever it carries: give the %s address of %s on site %s, with its prefix length, or drop %s from methods", strings.Join(needBy[fam], ", "), fam, fam, st.Dev, st.Name, strings.Join(needBy[fam], ", "))
				}
				continue
			}
			p, err := netip.ParsePrefix(v)
			if err != nil || (fam == "ipv4") != p.Addr().Is4() {
				bad(f+"."+field, "%q: give the %s address of %s with its prefix length, e.g. %s", v, fam, st.Dev, map[string]string{"ipv4": "10.0.0.1/24", "ipv6": "2001:db8::1/64"}[fam])
			}
		}
	}
	for i, p := range s.SSH.Pairs {
		if len(p) != 2 || p[0] == p[1] {
			bad(fmt.Sprintf("ssh.pairs[%d]", i), "%v: a pair is two different sites, [sender, receiver]", p)
			continue
		}
		for _, n := range p {
			if !names[n] {
				bad(fmt.Sprintf("ssh.pairs[%d]", i), "unknown site %q: sites are %s", n, strings.Join(sortedKeys(names), ", "))
			}
		}
	}
	return errs
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
