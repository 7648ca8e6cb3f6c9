package hostinfo

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestCollectFromCapturedProc(t *testing.T) {
	f := &fakeRunner{replies: map[string]fakeReply{
		"iperf3 --version": {out: readTestdata(t, "tools", "iperf3.txt")},
	}}
	root := "testdata/class/firecracker-kvm"
	c := readCapturedCPUID(t, root)
	h, err := collector{procDir: "testdata/proc", root: root, cpuid: func() CPUIDInfo { return c }, run: f, tools: Tools}.collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.CPUModel != "AMD EPYC" || h.CPUCount != 2 || h.MemoryMiB != 24105 {
		t.Errorf("cpu %q x%d, %d MiB; want AMD EPYC x2, 24105 MiB", h.CPUModel, h.CPUCount, h.MemoryMiB)
	}
	if diff := cmp.Diff(map[string]string{"iperf3": "3.12"}, h.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if h.Sysctls["net.ipv4.tcp_congestion_control"] != "bbr" || len(h.Sysctls) != len(Sysctls) {
		t.Errorf("sysctls = %v", h.Sysctls)
	}
	if h.GoVersion != runtime.Version() {
		t.Errorf("go version %q, want %q", h.GoVersion, runtime.Version())
	}
	// Test binaries carry no VCS stamp and no module version.
	if h.Tunbench != "devel" {
		t.Errorf("tunbench version %q, want devel", h.Tunbench)
	}
	if h.Emulated {
		t.Error("Collect claims an emulated machine")
	}
	if h.Class != "vm" || h.Hypervisor != "Firecracker" || h.ClassEvidence == "" || h.OSRelease != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("class %q (%q, %q), os release %q; want vm (Firecracker), Debian GNU/Linux 12 (bookworm)",
			h.Class, h.Hypervisor, h.ClassEvidence, h.OSRelease)
	}
}

// A capture of the lab's emulated guest makes Collect mark the host
// emulated by itself.
func TestCollectEmulated(t *testing.T) {
	root := "testdata/class/lab-qemu-tcg"
	c := readCapturedCPUID(t, root)
	h, err := collector{procDir: "testdata/proc", root: root, cpuid: func() CPUIDInfo { return c }, run: &fakeRunner{}}.collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Class != "emulated" || h.Hypervisor != "QEMU TCG" || !h.Emulated || !h.IsEmulated() || h.ClassLabel() != "emulated (QEMU TCG)" {
		t.Errorf("class %q (%q), emulated %v, label %q", h.Class, h.Hypervisor, h.Emulated, h.ClassLabel())
	}
}

// On the real machine the fields must agree with uname and hostname.
func TestCollectHost(t *testing.T) {
	h, err := Collect(context.Background(), ExecRunner{})
	if err != nil {
		t.Fatal(err)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	name, _ := os.Hostname()
	if h.Hostname != name || h.Kernel != unix.ByteSliceToString(u.Release[:]) || h.Arch != unix.ByteSliceToString(u.Machine[:]) {
		t.Errorf("host %q kernel %q arch %q disagree with uname", h.Hostname, h.Kernel, h.Arch)
	}
	if h.CPUCount < runtime.NumCPU() || h.MemoryMiB <= 0 {
		t.Errorf("cpu count %d (NumCPU %d), memory %d MiB", h.CPUCount, runtime.NumCPU(), h.MemoryMiB)
	}
	if _, ok := h.Sysctls["net.core.rmem_max"]; !ok {
		t.Errorf("sysctls lack net.core.rmem_max: %v", h.Sysctls)
	}
}

func TestTunbenchVersion(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "devel"},
		{"tagged module", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "v0.3.1"},
		{"vcs build", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, "0123456789ab"},
		{"dirty tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, "0123456789ab-dirty"},
		{"plain devel", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := tunbenchVersion(tc.info, tc.info != nil); got != tc.want {
			t.Errorf("%s: version %q, want %q", tc.name, got, tc.want)
		}
	}
}
