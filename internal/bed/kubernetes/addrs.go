package kubernetes

import (
	"net/netip"
	"strings"
)

// Addr is one address of a device, as "ip -o addr show" prints it.
type Addr struct {
	Dev    string
	Prefix netip.Prefix
}

// ParseAddrs reads the output of "ip -o addr show": one line per address,
// "IDX: DEV FAMILY PREFIX ...". Lines it cannot read are skipped.
func ParseAddrs(out string) []Addr {
	var addrs []Addr
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || (f[2] != "inet" && f[2] != "inet6") {
			continue
		}
		p, err := netip.ParsePrefix(f[3])
		if err != nil {
			continue
		}
		dev, _, _ := strings.Cut(f[1], "@")
		addrs = append(addrs, Addr{Dev: dev, Prefix: p})
	}
	return addrs
}
