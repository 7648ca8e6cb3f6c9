package podnet

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tunbench/tunbench/internal/testbed"
)

// Flannel is what a node's Flannel says it runs: its lease file
// (/run/flannel/subnet.env), its network configuration (net-conf.json,
// where flanneld's --net-config-path says) and its overlay device, read
// in flanneld's network namespace with ip -d -j link (netlink).
type Flannel struct {
	// Backend is the configuration's Backend.Type (vxlan, host-gw,
	// wireguard, ...); when the configuration cannot be read, what the
	// node's devices show.
	Backend string
	// Network and Subnet are the cluster's and this node's pod networks
	// (FLANNEL_NETWORK, FLANNEL_SUBNET); MTU is FLANNEL_MTU, the pods'.
	Network, Subnet string
	MTU             int
	// IPMasq is FLANNEL_IPMASQ.
	IPMasq bool
	// Device is the overlay device (flannel.1, flannel-wg), empty for
	// host-gw, which routes over the underlay; Kind its link kind,
	// DeviceMTU its MTU; VNI and Port a VXLAN device's id and UDP port.
	Device, Kind string
	DeviceMTU    int
	VNI, Port    int
	// Encryption is "wireguard" or "ipsec" for those backends, else
	// "none".
	Encryption string
}

// Label names the CNI and its backend: "flannel vxlan".
func (f Flannel) Label() string { return "flannel " + f.Backend }

func (f Flannel) String() string {
	var dev string
	switch {
	case f.Device == "":
		dev = "no overlay device"
	case f.Kind == "vxlan":
		dev = fmt.Sprintf("device %s vxlan id %d port %d mtu %d", f.Device, f.VNI, f.Port, f.DeviceMTU)
	default:
		dev = fmt.Sprintf("device %s %s mtu %d", f.Device, f.Kind, f.DeviceMTU)
	}
	return fmt.Sprintf("%s (%s, pod MTU %d, encryption %s, subnet %s of %s)", f.Label(), dev, f.MTU, f.Encryption, f.Subnet, f.Network)
}

// FlannelScript prints, on a node (its file system, its /proc), the
// Flannel lease file, then for the flanneld process whose view of that
// file is the same (the node's own, where several share a process
// table), its network configuration and its namespace's links. It prints
// nothing when the node has no lease file: Flannel is not its CNI.
const FlannelScript = `f=/run/flannel/subnet.env
[ -r "$f" ] || exit 0
echo "== subnet.env"; cat "$f"
for p in /proc/[0-9]*; do
  [ "$(cat "$p/comm" 2>/dev/null)" = flanneld ] || continue
  cmp -s "$p/root$f" "$f" 2>/dev/null || continue
  conf=/etc/kube-flannel/net-conf.json next=
  for a in $(tr '\0' ' ' < "$p/cmdline"); do
    if [ -n "$next" ]; then conf=$a next=; fi
    case "$a" in --net-config-path=*) conf=${a#*=};; --net-config-path) next=1;; esac
  done
  echo "== net-conf.json"; cat "$p/root$conf" 2>/dev/null; echo
  echo "== links"; nsenter -t "${p#/proc/}" -n ip -d -j link show
  exit 0
done
echo "== no flanneld"`

// ParseFlannel reads FlannelScript's output; ok is false when the node
// runs no Flannel (no output).
func ParseFlannel(out string) (f Flannel, ok bool, err error) {
	sections := map[string]string{}
	var cur string
	for _, l := range strings.SplitAfter(out, "\n") {
		if name, found := strings.CutPrefix(strings.TrimSpace(l), "== "); found {
			cur = name
			sections[cur] = ""
			continue
		}
		if cur != "" {
			sections[cur] += l
		}
	}
	env, found := sections["subnet.env"]
	if !found {
		return Flannel{}, false, nil
	}
	for _, l := range strings.Split(env, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch k {
		case "FLANNEL_NETWORK":
			f.Network = v
		case "FLANNEL_SUBNET":
			f.Subnet = v
		case "FLANNEL_MTU":
			if f.MTU, err = strconv.Atoi(v); err != nil {
				return f, true, fmt.Errorf("flannel subnet.env: FLANNEL_MTU %q: %w", v, err)
			}
		case "FLANNEL_IPMASQ":
			f.IPMasq = v == "true"
		}
	}
	if f.Subnet == "" || f.MTU == 0 {
		return f, true, fmt.Errorf("flannel subnet.env: no FLANNEL_SUBNET or FLANNEL_MTU:\n%s", env)
	}
	if _, none := sections["no flanneld"]; none {
		return f, true, fmt.Errorf("flannel: the node has %s but no flanneld process whose lease it is", "/run/flannel/subnet.env")
	}
	var conf struct {
		Backend struct {
			Type string `json:"Type"`
			VNI  int    `json:"VNI"`
		} `json:"Backend"`
	}
	if s := strings.TrimSpace(sections["net-conf.json"]); s != "" {
		if err := json.Unmarshal([]byte(s), &conf); err != nil {
			return f, true, fmt.Errorf("flannel net-conf.json: %w", err)
		}
	}
	var links []struct {
		Name     string `json:"ifname"`
		MTU      int    `json:"mtu"`
		LinkInfo struct {
			Kind string `json:"info_kind"`
			Data struct {
				ID   int `json:"id"`
				Port int `json:"port"`
			} `json:"info_data"`
		} `json:"linkinfo"`
	}
	if err := json.Unmarshal([]byte(sections["links"]), &links); err != nil {
		return f, true, fmt.Errorf("flannel: links of flanneld's namespace (ip -d -j link): %w", err)
	}
	vni := conf.Backend.VNI
	if vni == 0 {
		vni = 1 // flannel's default VNI
	}
	for _, l := range links {
		switch {
		case l.LinkInfo.Kind == "vxlan" && l.Name == fmt.Sprintf("flannel.%d", vni),
			l.LinkInfo.Kind == "wireguard" && strings.HasPrefix(l.Name, "flannel-wg"):
			if f.Device != "" {
				continue // the first: flannel-wg before flannel-wg-v6
			}
			f.Device, f.Kind, f.DeviceMTU = l.Name, l.LinkInfo.Kind, l.MTU
			f.VNI, f.Port = l.LinkInfo.Data.ID, l.LinkInfo.Data.Port
		}
	}
	f.Backend = conf.Backend.Type
	if f.Backend == "" {
		switch f.Kind {
		case "vxlan", "wireguard":
			f.Backend = f.Kind
		default:
			f.Backend = "unknown backend"
		}
	}
	if f.Backend == "vxlan" && f.Device == "" {
		return f, true, fmt.Errorf("flannel: backend vxlan, but flanneld's namespace has no vxlan device flannel.%d", vni)
	}
	switch f.Backend {
	case "wireguard", "ipsec":
		f.Encryption = f.Backend
	default:
		f.Encryption = "none"
	}
	return f, true, nil
}

// flannelOn reads the Flannel of ep's node; ok is false when the node
// runs none.
func flannelOn(ctx context.Context, ep *testbed.Endpoint) (Flannel, bool, error) {
	key := ep.Host + "\x00flannel"
	if c, ok := flannelRead.Load(key); ok {
		r := c.(flannelResult)
		return r.f, r.ok, nil
	}
	out, err := ep.Run(ctx, "sh", "-c", FlannelScript)
	if err != nil {
		return Flannel{}, false, fmt.Errorf("read Flannel's state on %s: %w", ep.Host, err)
	}
	f, ok, err := ParseFlannel(string(out))
	if err != nil {
		return f, ok, fmt.Errorf("%s: %w", ep.Host, err)
	}
	flannelRead.Store(key, flannelResult{f, ok})
	return f, ok, nil
}

// flannelRead caches what flannelOn read, by host (Setup, ImplementationOn
// and Counters ask the same node for every cell).
var flannelRead sync.Map

type flannelResult struct {
	f  Flannel
	ok bool
}
