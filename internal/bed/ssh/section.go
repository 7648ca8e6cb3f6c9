package ssh

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/scenario"
)

var siteName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)

// stray refuses an ssh section on another testbed.
func stray(s scenario.Scenario) error {
	if s.Section(SectionKey) == nil {
		return nil
	}
	return errors.New("ssh: hosts are only used by testbed ssh: set testbed: ssh or drop the ssh section")
}

// checkRecover: recover takes each site's own underlay device down and
// up, so it needs host changes there and refuses a device carrying the
// site's SSH connection.
func checkRecover(s scenario.Scenario) []error {
	x, err := FromScenario(s)
	if err != nil || x == nil {
		return nil // check refuses it
	}
	var errs []error
	for i, st := range x.Sites {
		if !x.ChangesHost(st.Name) {
			errs = append(errs, fmt.Errorf("ssh.sites[%d]: recover takes %s's underlay device %s down and up: set host_changes: true (for the site or the ssh section), or drop recover", i, st.Name, st.Dev))
		}
		if st.ControlOverDev {
			errs = append(errs, fmt.Errorf("ssh.sites[%d].control_over_dev: recover takes %s's underlay device down, which carries its SSH connection: drop recover, or reach the site over another device", i, st.Name))
		}
	}
	return errs
}

// check returns the problems of scenario s on the ssh testbed: its ssh
// section, and what the testbed cannot do (pin, wan; offloads other than
// on where a host's device stays as it is).
func check(s scenario.Scenario, c scenario.Catalog) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	x, err := FromScenario(s)
	if err != nil {
		return []error{err}
	}
	if x == nil || len(x.Sites) < 2 {
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
	for _, p := range pairs(s) {
		for _, n := range p {
			if !x.ChangesHost(n) && !slices.Contains(fixed, n) {
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
	for i, st := range x.Sites {
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
		if st.ControlOverDev && !x.ChangesHost(st.Name) {
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
	for i, p := range x.Pairs {
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
