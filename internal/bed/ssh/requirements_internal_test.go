package ssh

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/remotehost"
)

// fakeHost is a host as checkHost sees it: the programs on its PATH, the
// congestion control algorithms it offers and its kernel.
type fakeHost struct {
	programs []string
	ccs      []string
	kernel   hostinfo.Kernel
	// kernelErr fails Kernel; kernelRead counts the calls.
	kernelErr  error
	kernelRead int
}

func (f *fakeHost) MissingTools(_ context.Context, tools []remotehost.Tool) ([]remotehost.Tool, error) {
	var lack []remotehost.Tool
	for _, t := range tools {
		if !slices.Contains(f.programs, t.Program) {
			lack = append(lack, t)
		}
	}
	return lack, nil
}

func (f *fakeHost) CongestionControls(context.Context, []string) ([]string, error) {
	return f.ccs, nil
}

func (f *fakeHost) Kernel(context.Context) (hostinfo.Kernel, error) {
	f.kernelRead++
	return f.kernel, f.kernelErr
}

// kernelWith is a kernel whose config is config, without modules.
func kernelWith(config string) hostinfo.Kernel {
	return hostinfo.Kernel{Release: "6.1.0-test", Config: hostinfo.ParseKernelConfig([]byte(config)),
		Modules: hostinfo.Modules{Dir: "/nonexistent/lib/modules", ProcModules: "/nonexistent/proc/modules"}}
}

// TestRequirementsReport: every gap of every host is named in one error,
// one line each, the host first: programs with their install line,
// congestion control, and each method's kernel option with the method
// it cannot carry. Feature probes are not run for a remote host (they
// would probe this machine), and a host whose kernel config cannot be
// read is noted, not refused.
func TestRequirementsReport(t *testing.T) {
	probed := false
	cfg := Config{
		Tools:              []remotehost.Tool{{Program: "iperf3"}},
		CongestionControls: []string{"bbr"},
		Methods: []MethodNeeds{
			{Name: "native", Requirements: []method.Requirement{{Kernel: "CONFIG_VETH", Module: "veth"}}},
			{Name: "vxlan", Requirements: []method.Requirement{{Kernel: "CONFIG_VXLAN", Module: "vxlan"}}},
			{Name: "ebpf-geneve", Requirements: []method.Requirement{
				{Kernel: "CONFIG_BPF_SYSCALL", Bool: true},
				{Feature: "tc BPF programs", Probe: func() error { probed = true; return errors.New("probed here") }},
			}},
			{Name: "wireguard-go", Requirements: []method.Requirement{
				{Kernel: "CONFIG_TUN", Module: "tun"},
				{Program: "wireguard-go", Install: "go install golang.zx2c4.com/wireguard-go@latest"},
			}},
		},
	}
	hosts := []struct {
		name string
		h    *fakeHost
	}{
		{"fra", &fakeHost{programs: []string{"iperf3", "wireguard-go"}, ccs: []string{"cubic", "bbr"},
			kernel: kernelWith("CONFIG_VETH=y\n# CONFIG_VXLAN is not set\nCONFIG_BPF_SYSCALL=y\nCONFIG_TUN=y\n")}},
		{"nyc", &fakeHost{programs: []string{"wireguard-go"}, ccs: []string{"cubic", "reno"},
			// =m without the module loaded or installed, and absent.
			kernel: kernelWith("CONFIG_VETH=y\nCONFIG_VXLAN=y\nCONFIG_TUN=m\n")}},
		{"sgp", &fakeHost{programs: []string{"iperf3", "wireguard-go"}, ccs: []string{"bbr"},
			kernel: kernelWith("CONFIG_VETH=y\nCONFIG_VXLAN=y\nCONFIG_BPF_SYSCALL=y\nCONFIG_TUN=y\n")}},
	}
	var notes []string
	logf := func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }
	var errs []error
	for _, h := range hosts {
		errs = append(errs, cfg.checkHost(context.Background(), h.name, h.h, logf))
	}
	if errs[2] != nil {
		t.Errorf("sgp has everything, yet: %v", errs[2])
	}
	got := errors.Join(errs...).Error()
	want := strings.Join([]string{
		"host fra: method vxlan: kernel lacks CONFIG_VXLAN (the host's kernel cannot carry vxlan)",
		"host nyc lacks iperf3: apt-get install -y --no-install-recommends iperf3",
		"congestion_control: host nyc does not offer bbr (loading tcp_bbr failed); it offers cubic, reno: choose among those, or build or install the module",
		"host nyc: method ebpf-geneve: kernel lacks CONFIG_BPF_SYSCALL (the host's kernel cannot carry ebpf-geneve)",
		"host nyc: method wireguard-go: kernel lacks CONFIG_TUN (the host's kernel cannot carry wireguard-go)",
	}, "\n")
	if got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
	if probed {
		t.Error("a Feature probe ran for a remote host: it probes this machine")
	}
	if len(notes) != 0 {
		t.Errorf("notes for hosts whose config was read: %q", notes)
	}

	// A method's program joins the tools: one install line per host.
	if tools := cfg.tools(); len(tools) != 2 || tools[1].Program != "wireguard-go" {
		t.Errorf("tools = %+v, want iperf3 and wireguard-go", tools)
	}
	bare := &fakeHost{ccs: []string{"bbr"}, kernel: kernelWith("CONFIG_VETH=y\nCONFIG_VXLAN=y\nCONFIG_BPF_SYSCALL=y\nCONFIG_TUN=y\n")}
	err := cfg.checkHost(context.Background(), "bare", bare, logf)
	if want := "host bare lacks iperf3, wireguard-go: apt-get install -y --no-install-recommends iperf3; go install golang.zx2c4.com/wireguard-go@latest"; err == nil || err.Error() != want {
		t.Errorf("a host without programs: %v, want %q", err, want)
	}

	// No kernel config to read: it cannot tell, says so, and refuses
	// nothing for the kernel.
	unknown := &fakeHost{programs: []string{"iperf3", "wireguard-go"}, ccs: []string{"bbr"}, kernel: hostinfo.Kernel{Release: "6.1.0-bare"}}
	if err := cfg.checkHost(context.Background(), "lax", unknown, logf); err != nil {
		t.Errorf("a host without a kernel config: %v, want no refusal", err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "site lax: no kernel config to read") || !strings.Contains(notes[0], "/boot/config-6.1.0-bare") {
		t.Errorf("notes = %q, want one naming lax and its /boot/config", notes)
	}

	// A kernel that cannot be read is an error of its own, naming the
	// site; a run without kernel options does not read it at all.
	broken := &fakeHost{programs: []string{"iperf3", "wireguard-go"}, ccs: []string{"bbr"}, kernelErr: errors.New("gzip: invalid header")}
	if err := cfg.checkHost(context.Background(), "bad", broken, logf); err == nil || err.Error() != "site bad: read the kernel config: gzip: invalid header" {
		t.Errorf("an unreadable kernel config: %v", err)
	}
	plain := Config{Tools: cfg.Tools, Methods: []MethodNeeds{{Name: "native"}}}
	broken.kernelRead = 0
	if err := plain.checkHost(context.Background(), "bad", broken, logf); err != nil || broken.kernelRead != 0 {
		t.Errorf("a run without kernel options: %v, kernel read %d times; want nil, 0", err, broken.kernelRead)
	}
}
