package ipsec

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/method"
)

// This file holds the pure part of the IPsec methods: options, the
// strongswan.conf and swanctl.conf they generate, and the parser of
// "swanctl --list-sas --pretty". Nothing here touches the system.

// Data paths of the IPsec methods.
const (
	// ipsecXfrm is the kernel's ESP (xfrm states and policies installed by
	// charon's kernel-netlink plugin).
	ipsecXfrm = "xfrm"
	// ipsecLibipsec is strongSwan's userspace ESP (kernel-libipsec plugin):
	// charon reads cleartext packets from a TUN device and sends ESP in UDP.
	ipsecLibipsec = "libipsec"
	ipsecAuto     = "auto"
)

// Ciphers of the IPsec methods (ESP).
const (
	cipherAESGCM   = "aes256gcm"
	cipherChaCha20 = "chacha20poly1305"
)

// libipsecMaxMTU is the largest packet strongSwan's kernel-libipsec reads
// from its TUN device: the plugin sets the device MTU to 1400 when it
// creates it and tun_device caches that value as its read buffer size, so
// longer packets are truncated (and dropped) whatever MTU the device gets
// later. strongSwan 5.9 has no option for it.
const libipsecMaxMTU = 1400

// ipsecIKEProposal is the IKE (control channel) proposal; it does not
// touch the data path.
const ipsecIKEProposal = "aes256-sha256-modp2048"

// ipsecOptions are the parsed scenario options of ipsec and ipsec-ecmp.
type ipsecOptions struct {
	Mode     string // "tunnel" or "transport"
	Cipher   string // cipherAESGCM or cipherChaCha20
	NATT     bool   // force UDP encapsulation (encap = yes)
	Datapath string // ipsecAuto, ipsecXfrm or ipsecLibipsec
	Tunnels  int    // ipsec-ecmp only
}

// ipsecCommonOptions are the options of ipsec and ipsec-ecmp alike.
var ipsecCommonOptions = []method.Option{
	{Name: "cipher", Default: cipherAESGCM, Values: []string{cipherAESGCM, cipherChaCha20},
		Help: "ESP cipher"},
	{Name: "natt", Default: "off", Values: []string{"off", "on"},
		Help: "force UDP encapsulation of ESP (encap = yes)"},
	{Name: "datapath", Default: ipsecAuto, Values: []string{ipsecAuto, ipsecXfrm, ipsecLibipsec},
		Help: "ESP by the kernel (xfrm), by strongSwan in userspace (libipsec), or xfrm when the kernel has ESP (auto)"},
}

// ipsecDeclared are the options of ipsec (ecmp false) or ipsec-ecmp.
func ipsecDeclared(ecmp bool) []method.Option {
	if ecmp {
		return append(slices.Clone(ipsecCommonOptions), method.Option{Name: "tunnels", Default: "2", Min: 1, Max: maxIPsecTunnels,
			Help: "IPsec tunnels behind the ECMP route"})
	}
	return append([]method.Option{{Name: "mode", Default: "tunnel", Values: []string{"tunnel", "transport"},
		Help: "ESP mode (transport needs the xfrm data path)"}}, ipsecCommonOptions...)
}

// maxIPsecTunnels bounds the tunnels option of ipsec-ecmp: each tunnel is
// a charon per side on the libipsec path.
const maxIPsecTunnels = 8

// parseIPsecOptions validates opts. ecmp selects the ipsec-ecmp set:
// "tunnels" is accepted and "mode" is not (ECMP needs tunnel mode).
func parseIPsecOptions(opts map[string]string, ecmp bool) (ipsecOptions, error) {
	name := "ipsec"
	if ecmp {
		name = "ipsec-ecmp"
	}
	v, err := method.ParseDeclared(name, ipsecDeclared(ecmp), opts)
	if err != nil {
		return ipsecOptions{}, err
	}
	o := ipsecOptions{Mode: v.String("mode"), Cipher: v.String("cipher"), NATT: v.On("natt"),
		Datapath: v.String("datapath"), Tunnels: v.Int("tunnels")}
	if !ecmp {
		o.Tunnels = 1
	} else {
		o.Mode = "tunnel"
	}
	return o, nil
}

// espProposal is the swanctl esp_proposals value for cipher.
func espProposal(cipher string) string {
	if cipher == cipherChaCha20 {
		return "chacha20poly1305"
	}
	return "aes256gcm16"
}

// xfrmAEAD is the kernel's name for cipher's ESP transform, its key length
// (key plus 4-byte salt) and its ICV length in bits.
func xfrmAEAD(cipher string) (name string, keyLen, icvBits int) {
	if cipher == cipherChaCha20 {
		return "rfc7539esp(chacha20,poly1305)", 32 + 4, 128
	}
	return "rfc4106(gcm(aes))", 32 + 4, 128
}

// ipsecOverhead is the worst-case number of bytes ESP adds to a packet:
//
//	outer IP header       20 (IPv4) / 40 (IPv6), tunnel mode only
//	UDP header             8, with UDP encapsulation (NAT-T, libipsec)
//	ESP header             8 (SPI 4, sequence number 4)
//	IV                     8 (AES-GCM, RFC 4106; ChaCha20-Poly1305, RFC 7634)
//	padding              0-3 (the ESP trailer ends on a 4-byte boundary)
//	pad length, next hdr   2
//	ICV                   16 (both AEADs)
//
// Tunnel mode, IPv4 outer: 20+8+8+3+2+16 = 57, with UDP 65; IPv6 outer:
// 77, with UDP 85. Transport mode: 37, with UDP 45.
func ipsecOverhead(family, mode string, udp bool) int {
	n := 8 + 8 + 3 + 2 + 16
	if mode == "tunnel" {
		if family == method.IPv6 {
			n += 40
		} else {
			n += 20
		}
	}
	if udp {
		n += 8
	}
	return n
}

// charonConfig is one charon's strongswan.conf. Paths are as charon sees
// them: its private /run.
type charonConfig struct {
	Datapath string
	// Port and PortNATT are charon's IKE ports (0 lets charon pick Port).
	Port, PortNATT int
	// RouteMTU is set on the routes charon installs (0: none).
	RouteMTU int
	// InstallRoutes lets charon install routes for its CHILD_SAs (ignored
	// by kernel-libipsec, which always routes into its TUN device).
	InstallRoutes bool
	// Table is the routing table charon installs its routes in and the
	// priority of the rule to it that charon adds at start and deletes
	// at exit (routing_table, routing_table_prio): the run's own
	// (runTable), never charon's default 220, which a host running
	// strongSwan uses. A zero Table is routing_table = 0: no table, no
	// rule.
	Table runTable
	// Family, when set, is the only family charon opens its IKE sockets
	// in (socket-default's use_ipv4 and use_ipv6): socket-default cannot
	// bind an address, only leave a family out.
	Family string
}

// charonRun is charon's /run: a private directory of ours bind-mounted
// there in charon's own mount namespace.
const charonRun = "/run"

// charonPlugins lists the plugins charon loads. "kdf" is needed by 5.9.8
// (without it IKE fails with "KDF_PRF ... not supported"), and
// kernel-libipsec must come before kernel-netlink so that it provides the
// IPsec backend.
func charonPlugins(datapath string) []string {
	p := []string{"random", "nonce", "openssl", "kdf"}
	if datapath == ipsecLibipsec {
		p = append(p, "kernel-libipsec")
	}
	return append(p, "kernel-netlink", "socket-default", "vici")
}

func swanYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// render returns the strongswan.conf text.
func (c charonConfig) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# generated by tunbench: one charon of an ipsec run\n")
	fmt.Fprintf(&b, "charon {\n")
	fmt.Fprintf(&b, "\tload = %s\n", strings.Join(charonPlugins(c.Datapath), " "))
	fmt.Fprintf(&b, "\tport = %d\n", c.Port)
	fmt.Fprintf(&b, "\tport_nat_t = %d\n", c.PortNATT)
	fmt.Fprintf(&b, "\tinstall_routes = %s\n", swanYesNo(c.InstallRoutes))
	fmt.Fprintf(&b, "\tinstall_virtual_ip = no\n")
	fmt.Fprintf(&b, "\trouting_table = %d\n", c.Table.Table)
	if c.Table.Table != 0 {
		fmt.Fprintf(&b, "\trouting_table_prio = %d\n", c.Table.Priority)
	}
	fmt.Fprintf(&b, "\tplugins {\n")
	fmt.Fprintf(&b, "\t\tvici {\n\t\t\tsocket = unix://%s/charon.vici\n\t\t}\n", charonRun)
	if c.RouteMTU > 0 {
		fmt.Fprintf(&b, "\t\tkernel-netlink {\n\t\t\tmtu = %d\n\t\t}\n", c.RouteMTU)
	}
	if c.Family != "" {
		fmt.Fprintf(&b, "\t\tsocket-default {\n\t\t\tuse_ipv4 = %s\n\t\t\tuse_ipv6 = %s\n\t\t}\n",
			swanYesNo(c.Family == method.IPv4), swanYesNo(c.Family == method.IPv6))
	}
	fmt.Fprintf(&b, "\t}\n")
	fmt.Fprintf(&b, "\tfilelog {\n")
	fmt.Fprintf(&b, "\t\tcharon {\n")
	fmt.Fprintf(&b, "\t\t\tpath = %s/charon.log\n", charonRun)
	fmt.Fprintf(&b, "\t\t\tappend = yes\n")
	fmt.Fprintf(&b, "\t\t\tflush_line = yes\n")
	fmt.Fprintf(&b, "\t\t\ttime_format = %%T\n")
	fmt.Fprintf(&b, "\t\t\tdefault = 1\n")
	fmt.Fprintf(&b, "\t\t}\n")
	fmt.Fprintf(&b, "\t}\n")
	fmt.Fprintf(&b, "}\n")
	// swanctl reads the same file; it needs no plugins for PSK configs
	// (an empty list would load every plugin it knows, noisily).
	fmt.Fprintf(&b, "swanctl {\n\tload = random\n}\n")
	return b.String()
}

// swanctlChild is one CHILD_SA of a connection.
type swanctlChild struct {
	Name              string
	Mode              string
	LocalTS, RemoteTS string
	ESPProposal       string
	// IfID binds the SA and its policies to an xfrm interface (0: none).
	IfID int
	// NoRekey disables rekeying (and with it the hard lifetime).
	NoRekey bool
}

// swanctlConfig is one side's swanctl.conf: one connection and its PSK.
type swanctlConfig struct {
	Name                  string
	LocalAddr, RemoteAddr string
	// RemotePort is the peer's IKE port (0: the default 500).
	RemotePort        int
	LocalID, RemoteID string
	Encap             bool
	Children          []swanctlChild
	// PSK is the pre-shared key in swanctl's "0s" base64 form.
	PSK string
}

// render returns the swanctl.conf text of c alone.
func (c swanctlConfig) render() string { return renderSwanctl([]swanctlConfig{c}) }

// renderSwanctl returns the swanctl.conf text of the connections cs, each
// with its PSK bound to its identities. It holds the PSKs: write it with
// WriteSecret only.
func renderSwanctl(cs []swanctlConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# generated by tunbench: holds the run's pre-shared key\n")
	fmt.Fprintf(&b, "connections {\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "\t%s {\n", c.Name)
		fmt.Fprintf(&b, "\t\tversion = 2\n")
		fmt.Fprintf(&b, "\t\tlocal_addrs = %s\n", c.LocalAddr)
		fmt.Fprintf(&b, "\t\tremote_addrs = %s\n", c.RemoteAddr)
		if c.RemotePort != 0 {
			fmt.Fprintf(&b, "\t\tremote_port = %d\n", c.RemotePort)
		}
		fmt.Fprintf(&b, "\t\tproposals = %s\n", ipsecIKEProposal)
		fmt.Fprintf(&b, "\t\tencap = %s\n", swanYesNo(c.Encap))
		fmt.Fprintf(&b, "\t\tmobike = no\n")
		fmt.Fprintf(&b, "\t\tunique = never\n")
		fmt.Fprintf(&b, "\t\tlocal {\n\t\t\tauth = psk\n\t\t\tid = %s\n\t\t}\n", c.LocalID)
		fmt.Fprintf(&b, "\t\tremote {\n\t\t\tauth = psk\n\t\t\tid = %s\n\t\t}\n", c.RemoteID)
		fmt.Fprintf(&b, "\t\tchildren {\n")
		for _, ch := range c.Children {
			fmt.Fprintf(&b, "\t\t\t%s {\n", ch.Name)
			fmt.Fprintf(&b, "\t\t\t\tmode = %s\n", ch.Mode)
			fmt.Fprintf(&b, "\t\t\t\tlocal_ts = %s\n", ch.LocalTS)
			fmt.Fprintf(&b, "\t\t\t\tremote_ts = %s\n", ch.RemoteTS)
			fmt.Fprintf(&b, "\t\t\t\tesp_proposals = %s\n", ch.ESPProposal)
			if ch.IfID != 0 {
				fmt.Fprintf(&b, "\t\t\t\tif_id_in = %d\n\t\t\t\tif_id_out = %d\n", ch.IfID, ch.IfID)
			}
			if ch.NoRekey {
				fmt.Fprintf(&b, "\t\t\t\trekey_time = 0s\n")
			}
			fmt.Fprintf(&b, "\t\t\t\tstart_action = none\n")
			fmt.Fprintf(&b, "\t\t\t}\n")
		}
		fmt.Fprintf(&b, "\t\t}\n")
		fmt.Fprintf(&b, "\t}\n")
	}
	fmt.Fprintf(&b, "}\n")
	fmt.Fprintf(&b, "secrets {\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "\tike-%s {\n", c.Name)
		fmt.Fprintf(&b, "\t\tid-local = %s\n", c.LocalID)
		fmt.Fprintf(&b, "\t\tid-remote = %s\n", c.RemoteID)
		fmt.Fprintf(&b, "\t\tsecret = %s\n", c.PSK)
		fmt.Fprintf(&b, "\t}\n")
	}
	fmt.Fprintf(&b, "}\n")
	return b.String()
}

// ikeSA is one IKE_SA of "swanctl --list-sas --pretty".
type ikeSA struct {
	Name                  string
	State                 string // e.g. ESTABLISHED
	LocalHost, RemoteHost string
	LocalPort, RemotePort int
	Children              []childSA
}

// childSA is one CHILD_SA of an IKE_SA.
type childSA struct {
	Name     string
	State    string // e.g. INSTALLED
	Mode     string // TUNNEL or TRANSPORT
	Protocol string // ESP
	Encap    bool   // UDP encapsulation
	SPIIn    string
	SPIOut   string
	EncrAlg  string
	// Byte and packet counters of the SA, both directions.
	BytesIn, BytesOut     uint64
	PacketsIn, PacketsOut uint64
	LocalTS, RemoteTS     []string
}

// viciNode is a section of the pretty-printed vici message: key/values,
// lists and subsections in order.
type viciNode struct {
	name     string
	values   map[string]string
	lists    map[string][]string
	sections []*viciNode
}

func newViciNode(name string) *viciNode {
	return &viciNode{name: name, values: map[string]string{}, lists: map[string][]string{}}
}

// parseListSAs parses the output of "swanctl --list-sas --pretty": one
// "list-sa event { ... }" per IKE_SA, then "list-sas reply { }". Lines
// that are not part of a vici message (swanctl's own warnings) are
// rejected, so a format change is noticed.
func parseListSAs(out []byte) ([]ikeSA, error) {
	root := newViciNode("")
	stack := []*viciNode{root}
	listKey := "" // the open list of the top section, if any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		top := stack[len(stack)-1]
		switch {
		case line == "":
		case listKey != "" && line == "]":
			listKey = ""
		case listKey != "":
			top.lists[listKey] = append(top.lists[listKey], line)
		case line == "}":
			if len(stack) == 1 {
				return nil, fmt.Errorf("list-sas line %d: unbalanced }", n)
			}
			stack = stack[:len(stack)-1]
		case strings.HasSuffix(line, "{}"):
			// An empty section, such as "list-sas reply {}".
		case strings.HasSuffix(line, "{"):
			sec := newViciNode(strings.TrimSpace(strings.TrimSuffix(line, "{")))
			top.sections = append(top.sections, sec)
			stack = append(stack, sec)
		default:
			k, v, ok := strings.Cut(line, " = ")
			if !ok {
				return nil, fmt.Errorf("list-sas line %d: unexpected %q", n, line)
			}
			if v == "[" {
				listKey = k
				top.lists[k] = []string{}
				continue
			}
			top.values[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list-sas: %w", err)
	}
	if len(stack) != 1 || listKey != "" {
		return nil, fmt.Errorf("list-sas: output ends inside a section")
	}
	return listSAsFromTree(root)
}

// listSAsFromTree turns the parsed message into IKE and CHILD SAs.
func listSAsFromTree(root *viciNode) ([]ikeSA, error) {
	var sas []ikeSA
	for _, ev := range root.sections {
		if ev.name != "list-sa event" {
			continue
		}
		for _, s := range ev.sections {
			sa := ikeSA{
				Name:       s.name,
				State:      s.values["state"],
				LocalHost:  s.values["local-host"],
				RemoteHost: s.values["remote-host"],
			}
			var err error
			if sa.LocalPort, err = viciAtoi(s, "local-port"); err != nil {
				return nil, err
			}
			if sa.RemotePort, err = viciAtoi(s, "remote-port"); err != nil {
				return nil, err
			}
			for _, cs := range s.sections {
				if cs.name != "child-sas" {
					continue
				}
				for _, c := range cs.sections {
					ch := childSA{
						Name:     c.values["name"],
						State:    c.values["state"],
						Mode:     c.values["mode"],
						Protocol: c.values["protocol"],
						Encap:    c.values["encap"] == "yes",
						SPIIn:    c.values["spi-in"],
						SPIOut:   c.values["spi-out"],
						EncrAlg:  c.values["encr-alg"],
						LocalTS:  c.lists["local-ts"],
						RemoteTS: c.lists["remote-ts"],
					}
					for key, dst := range map[string]*uint64{
						"bytes-in": &ch.BytesIn, "bytes-out": &ch.BytesOut,
						"packets-in": &ch.PacketsIn, "packets-out": &ch.PacketsOut,
					} {
						v, ok := c.values[key]
						if !ok {
							continue
						}
						n, err := strconv.ParseUint(v, 10, 64)
						if err != nil {
							return nil, fmt.Errorf("list-sas: child %s: %s=%q: %w", ch.Name, key, v, err)
						}
						*dst = n
					}
					sa.Children = append(sa.Children, ch)
				}
			}
			sas = append(sas, sa)
		}
	}
	return sas, nil
}

func viciAtoi(n *viciNode, key string) (int, error) {
	v, ok := n.values[key]
	if !ok {
		return 0, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("list-sas: %s %s=%q: %w", n.name, key, v, err)
	}
	return i, nil
}

// installedChild returns the named CHILD_SA when it is INSTALLED.
func installedChild(sas []ikeSA, name string) (childSA, bool) {
	for _, sa := range sas {
		for _, c := range sa.Children {
			if c.Name == name && c.State == "INSTALLED" {
				return c, true
			}
		}
	}
	return childSA{}, false
}

// The tunnels dimension (method.Scaler): one tunnel of ipsec is one
// CHILD_SA, all under the one IKE_SA between the two charons, each with
// traffic selectors of its own (a host address pair on lo).

// ipsecScaleUnit is what one tunnel of ipsec is.
const ipsecScaleUnit = "CHILD_SA"

// maxIPsecChildren bounds the CHILD_SAs of one ipsec set-up. Both limits
// come from vici, the only interface to charon, whose messages are at
// most 512 KiB (VICI_MESSAGE_SIZE_MAX, both directions): swanctl loads a
// connection with all its children in one message, and lists an IKE_SA
// with all its CHILD_SAs in one event, about 300 bytes a CHILD_SA
// (names, SPIs, algorithms, counters, times, selectors), so that beyond
// some 1,500 children swanctl --list-sas can no longer read the IKE_SA
// back. The bound leaves room for the reconf test's one more and for
// longer IPv6 selectors.
const maxIPsecChildren = 1024

// ipsecScale is the Scale of ipsec for family and mode.
func ipsecScale(family, mode string) method.Scale {
	if mode == "transport" {
		return method.Scale{Unit: ipsecScaleUnit, Max: 1,
			Why: "transport mode protects the traffic between the two underlay addresses, one pair of traffic selectors: use mode tunnel for more CHILD_SAs"}
	}
	// Cost: 1,000 CHILD_SAs set up in 9.0 to 9.8 s and torn down in 0.4
	// to 0.7 s here (libipsec), one swanctl --initiate each.
	s := method.Scale{Unit: ipsecScaleUnit, Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family), Cost: 10 * time.Millisecond}
	if maxIPsecChildren < s.Max {
		s.Max = maxIPsecChildren
		s.Why = "strongSwan's vici messages hold at most 512 KiB, and swanctl loads and lists one IKE_SA with all its CHILD_SAs in one message (some 360 bytes a CHILD_SA)"
	}
	return s
}

// ecmpScale is the Scale of ipsec-ecmp: its own tunnels option already
// sets how many tunnels carry the one overlay pair behind the ECMP
// route, so the dimension is refused.
func ecmpScale() method.Scale {
	return method.Scale{Unit: "tunnel", Max: 1,
		Why: fmt.Sprintf("ipsec-ecmp's tunnels are its own option tunnels (1-%d), all carrying one overlay address pair behind one ECMP route: set options tunnels for that, or use ipsec for N CHILD_SAs", maxIPsecTunnels)}
}

// ipsecChild is one CHILD_SA of an ipsec set-up: its name and the
// overlay addresses of sides a and b it selects (host addresses on lo).
type ipsecChild struct {
	Name string
	A, B netip.Addr
}

// ipsecChildName is the name of CHILD_SA i of a set-up whose measured
// CHILD_SA is measured: "tunbench" for the measured one, as with a single
// tunnel (Rekey names it), "t<i>" for the others (short: every name is
// in each vici message that lists them).
func ipsecChildName(i, measured int) string {
	if i == measured {
		return "tunbench"
	}
	return "t" + strconv.Itoa(i)
}

// ipsecChildOf is CHILD_SA i of a set-up in family whose measured
// CHILD_SA is measured, with method.ScaleOverlay's addresses (index N
// is the one Grow adds).
func ipsecChildOf(family string, i, measured int) ipsecChild {
	a, b := method.ScaleOverlay(family, i, measured)
	return ipsecChild{Name: ipsecChildName(i, measured), A: a.Addr(), B: b.Addr()}
}

// ipsecChildren is the plan of the n CHILD_SAs of a set-up in family,
// in index order: the order they are initiated in, so that the measured
// one (method.MeasuredTunnel) is neither the first nor the last a data
// path that keeps them in order of installation searches. The first
// brings up the IKE_SA.
func ipsecChildren(family string, n int) []ipsecChild {
	n = max(n, 1)
	measured := method.MeasuredTunnel(n)
	cs := make([]ipsecChild, n)
	for i := range n {
		cs[i] = ipsecChildOf(family, i, measured)
	}
	return cs
}

// local and remote are c's addresses as side sees them.
func (c ipsecChild) local(side string) netip.Addr {
	if side == "b" {
		return c.B
	}
	return c.A
}

func (c ipsecChild) remote(side string) netip.Addr {
	if side == "b" {
		return c.A
	}
	return c.B
}

// missingChildren are the names of the CHILD_SAs of want that sas do not
// list as INSTALLED exactly once, in want's order.
func missingChildren(sas []ikeSA, want []ipsecChild) []string {
	count := map[string]int{}
	for _, sa := range sas {
		for _, c := range sa.Children {
			if c.State == "INSTALLED" {
				count[c.Name]++
			}
		}
	}
	var missing []string
	for _, c := range want {
		if count[c.Name] != 1 {
			missing = append(missing, c.Name)
		}
	}
	return missing
}
