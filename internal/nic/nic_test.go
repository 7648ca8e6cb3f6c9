package nic

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netns"
)

// Features must agree with `ethtool -k` on every line, for a veth on both
// sides of the pair and for a vxlan device on top of it.
func TestFeaturesMatchEthtoolCLI(t *testing.T) {
	tb := newTestbed(t, true)
	for _, tc := range []struct {
		name string
		ns   netns.NsHandle
		dev  string
	}{
		{tb.nameA, tb.a, "va"},
		{tb.nameB, tb.b, "vb"},
		{tb.nameA, tb.a, "vx0"},
	} {
		got, err := Features(tc.ns, tc.dev)
		if err != nil {
			t.Fatalf("Features(%s): %v", tc.dev, err)
		}
		want, _ := ethtoolK(t, tc.name, tc.dev)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Features(%s) differs from ethtool -k (-ethtool +Features):\n%s", tc.dev, diff)
		}
	}
}

func TestSetOffloadsOffAndOn(t *testing.T) {
	tb := newTestbed(t, true)
	for _, dev := range []string{"va", "vx0"} {
		for _, on := range []bool{false, true} {
			if err := SetOffloads(tb.a, dev, on); err != nil {
				t.Fatalf("SetOffloads(%s, %v): %v", dev, on, err)
			}
			got, err := Features(tb.a, dev)
			if err != nil {
				t.Fatal(err)
			}
			cli, _ := ethtoolK(t, tb.nameA, dev)
			for _, name := range []string{
				"tcp-segmentation-offload", "tx-tcp-segmentation", "tx-tcp6-segmentation",
				"generic-segmentation-offload", "generic-receive-offload",
			} {
				if got[name] != on {
					t.Errorf("%s after SetOffloads(%v): Features says %s is %v", dev, on, name, got[name])
				}
				if cli[name] != on {
					t.Errorf("%s after SetOffloads(%v): ethtool -k says %s is %v", dev, on, name, cli[name])
				}
			}
		}
	}
}

func TestSetFeaturesByName(t *testing.T) {
	tb := newTestbed(t, false)
	want := map[string]bool{"gro": true, "rx-gro-list": true, "tx-nocache-copy": true}
	if err := SetFeatures(tb.a, "va", want); err != nil {
		t.Fatal(err)
	}
	cli, _ := ethtoolK(t, tb.nameA, "va")
	for _, name := range []string{"generic-receive-offload", "rx-gro-list", "tx-nocache-copy"} {
		if !cli[name] {
			t.Errorf("ethtool -k says %s is off after SetFeatures", name)
		}
	}
}

func TestSetFeaturesReportsFixed(t *testing.T) {
	tb := newTestbed(t, false)
	err := SetFeatures(tb.a, "va", map[string]bool{"large-receive-offload": true, "generic-receive-offload": true})
	var fe *FeatureError
	if !errors.As(err, &fe) {
		t.Fatalf("SetFeatures(lro on) = %v, want a *FeatureError", err)
	}
	if !fe.Fixed || fe.Feature != "large-receive-offload" || fe.Dev != "va" {
		t.Errorf("FeatureError = %+v, want large-receive-offload fixed on va", fe)
	}
	if !strings.Contains(err.Error(), "feature large-receive-offload is fixed off on dev va") {
		t.Errorf("error %q does not say the feature is fixed", err)
	}
	// The changeable feature of the same request still took effect.
	got, ferr := Features(tb.a, "va")
	if ferr != nil {
		t.Fatal(ferr)
	}
	if !got["generic-receive-offload"] {
		t.Error("generic-receive-offload stayed off")
	}
}

func TestSetFeaturesUnknownName(t *testing.T) {
	tb := newTestbed(t, false)
	err := SetFeatures(tb.a, "va", map[string]bool{"warp-drive": true})
	if err == nil || !strings.Contains(err.Error(), `unknown feature "warp-drive"`) {
		t.Errorf("SetFeatures(warp-drive) = %v, want unknown feature error", err)
	}
}

func TestFeaturesMissingDevice(t *testing.T) {
	tb := newTestbed(t, false)
	_, err := Features(tb.a, "nosuchdev0")
	if err == nil || !strings.Contains(err.Error(), "nosuchdev0") {
		t.Errorf("Features(nosuchdev0) = %v, want an error naming the device", err)
	}
}

func TestDescribeAll(t *testing.T) {
	tb := newTestbed(t, true)
	devs, err := DescribeAll(tb.a, "a")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Side, Name, Kind string
		MTU              int
	}
	var got []row
	for _, d := range devs {
		got = append(got, row{d.Side, d.Name, d.Kind, d.MTU})
		cli, _ := ethtoolK(t, tb.nameA, d.Name)
		if diff := cmp.Diff(cli, d.Offloads); diff != "" {
			t.Errorf("offloads of %s differ from ethtool -k (-ethtool +DescribeAll):\n%s", d.Name, diff)
		}
	}
	// vxlan over IPv4 takes 50 bytes of the veth's 1500.
	want := []row{{"a", "va", "veth", 1500}, {"a", "vx0", "vxlan", 1450}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DescribeAll (-want +got):\n%s", diff)
	}
	// A scaled cell leaves out the devices skip names (the other
	// tunnels'), and keeps the rest.
	except, err := DescribeExcept(tb.a, "a", func(name string) bool { return name == "vx0" })
	if err != nil {
		t.Fatal(err)
	}
	if len(except) != 1 || except[0].Name != "va" {
		t.Errorf("DescribeExcept without vx0: %+v, want va alone", except)
	}
	d, err := Describe(tb.b, "vb")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "vb" || d.Kind != "veth" || d.MTU != 1500 || len(d.Offloads) == 0 {
		t.Errorf("Describe(vb) = %+v", d)
	}
}

func TestSetMTU(t *testing.T) {
	tb := newTestbed(t, false)
	if err := SetMTU(tb.a, "va", 1400); err != nil {
		t.Fatal(err)
	}
	argv := []string{"ip", "-n", tb.nameA, "-o", "link", "show", "dev", "va"}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, out)
	}
	if !strings.Contains(string(out), " mtu 1400 ") {
		t.Errorf("ip link show after SetMTU(1400): %s", out)
	}
	if err := SetMTU(tb.a, "va", 10); err == nil {
		t.Error("SetMTU(10) succeeded; the kernel's minimum is 68")
	}
}

func BenchmarkFeatures(b *testing.B) {
	tb := newTestbed(b, false)
	for b.Loop() {
		if _, err := Features(tb.a, "va"); err != nil {
			b.Fatal(err)
		}
	}
}

// netns.None() means the calling thread's namespace.
func TestFeaturesCurrentNamespace(t *testing.T) {
	got, err := Features(netns.None(), "lo")
	if err != nil {
		t.Fatal(err)
	}
	if !got["loopback"] {
		t.Errorf("lo in the current namespace: loopback feature off: %v", got)
	}
}
