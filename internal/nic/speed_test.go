package nic

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

func TestLineRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ls       LinkSpeed
		scenario float64
		bps      float64
		source   string
	}{
		{"veth alone: unknown", LinkSpeed{Driver: "veth", SpeedMbps: 10000}, 0, 0, ""},
		{"veth with scenario", LinkSpeed{Driver: "veth", SpeedMbps: 10000}, 25e9, 25e9, SourceScenario},
		{"tun alone: unknown", LinkSpeed{Driver: "tun", SpeedMbps: 10}, 0, 0, ""},
		{"bridge alone", LinkSpeed{Driver: "bridge", SpeedMbps: 10000}, 0, 0, ""},
		{"vxlan alone", LinkSpeed{Driver: "vxlan", SpeedMbps: 10000}, 0, 0, ""},
		{"physical 25G", LinkSpeed{Driver: "mlx5_core", SpeedMbps: 25000}, 0, 25e9, SourceDevice},
		{"physical wins over scenario", LinkSpeed{Driver: "ice", SpeedMbps: 100000}, 25e9, 100e9, SourceDevice},
		{"physical, speed unknown (link down)", LinkSpeed{Driver: "ixgbe", SpeedMbps: 0}, 10e9, 10e9, SourceScenario},
		{"no driver read", LinkSpeed{Driver: "", SpeedMbps: 10000}, 0, 0, ""},
		{"nothing", LinkSpeed{}, 0, 0, ""},
		{"physical NIC, kind device", LinkSpeed{Driver: "ixgbe", SpeedMbps: 10000, Kind: "device"}, 0, 10e9, SourceDevice},
		{"unlisted driver on a veth-kind link", LinkSpeed{Driver: "newvirt", SpeedMbps: 10000, Kind: "veth"}, 0, 0, ""},
		{"unlisted driver on a tuntap link", LinkSpeed{Driver: "newvirt", SpeedMbps: 10, Kind: "tuntap"}, 5e9, 5e9, SourceScenario},
	} {
		bps, src := LineRate(tc.ls, tc.scenario)
		if bps != tc.bps || src != tc.source {
			t.Errorf("%s: LineRate(%+v, %g) = %g %q, want %g %q", tc.name, tc.ls, tc.scenario, bps, src, tc.bps, tc.source)
		}
	}
}

// The veth of a real namespace pair: the driver is veth, the speed what
// `ethtool` prints, and no line rate comes of it.
func TestSpeedOfVethGivesNoLineRate(t *testing.T) {
	tb := newTestbed(t, false)
	ls, err := Speed(tb.a, "va")
	if err != nil {
		t.Fatal(err)
	}
	if ls.Driver != "veth" || ls.Kind != "veth" {
		t.Errorf("driver %q, kind %q, want veth", ls.Driver, ls.Kind)
	}
	if out, err := exec.Command("ip", "netns", "exec", tb.nameA, "ethtool", "va").Output(); err == nil {
		want := "Speed: Unknown!"
		if ls.SpeedMbps > 0 {
			want = fmt.Sprintf("Speed: %dMb/s", ls.SpeedMbps)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("speed %d Mb/s; ethtool says:\n%s", ls.SpeedMbps, out)
		}
	}
	t.Logf("va: driver %s, speed %d Mb/s", ls.Driver, ls.SpeedMbps)
	if bps, src := LineRate(ls, 0); bps != 0 || src != "" {
		t.Errorf("veth line rate %g from %q, want none", bps, src)
	}
}
