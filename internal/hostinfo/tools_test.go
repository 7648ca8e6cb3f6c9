package hostinfo

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testdata/tools holds real `TOOL --version` output (LC_ALL=C) of the
// tools installed on the development machine (Debian 12 packages); wg,
// wireguard-go, openvpn, ovs-vswitchd, netperf and boringtun-cli were not
// installed when it was captured.
func TestParseVersionCaptured(t *testing.T) {
	for file, want := range map[string]string{
		"iperf3.txt":   "3.12",       // iperf 3.12 (cJSON 1.7.15)
		"sockperf.txt": "3.7-no.git", // sockperf, version 3.7-no.git
		"ip.txt":       "6.1.0",      // ip utility, iproute2-6.1.0, libbpf 1.1.2
		"ethtool.txt":  "6.1",        // ethtool version 6.1
		// QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)
		"qemu-system-x86_64.txt": "7.2.22",
		// Without a running charon, plugin warnings and a connect error
		// come first, then "strongSwan 5.9.8 swanctl" and usage (exit 2).
		"swanctl.txt": "5.9.8",
		"nebula.txt":  "1.11.1", // Version: 1.11.1
		// go install records no VCS stamp, so tailscaled says so.
		"tailscaled.txt": "1.100.0-ERR-BuildInfo",
	} {
		got, ok := ParseVersion(readTestdata(t, "tools", file))
		if !ok || got != want {
			t.Errorf("ParseVersion(%s) = %q, %v; want %q", file, got, ok, want)
		}
	}
	for _, out := range []string{"", "usage: frob [-h]\n", "x86_64 linux\n"} {
		if v, ok := ParseVersion([]byte(out)); ok {
			t.Errorf("ParseVersion(%q) = %q, want none", out, v)
		}
	}
}

func TestToolVersions(t *testing.T) {
	f := &fakeRunner{replies: map[string]fakeReply{
		"iperf3 --version":   {out: readTestdata(t, "tools", "iperf3.txt")},
		"ip -V":              {out: readTestdata(t, "tools", "ip.txt")},
		"sockperf --version": {out: []byte("garbage\n")},
		// Exits non-zero but printed its version, as openvpn --version does.
		"ethtool --version": {out: readTestdata(t, "tools", "ethtool.txt"), err: errors.New("exit status 1")},
	}}
	got := toolVersions(context.Background(), f, Tools)
	want := map[string]string{"iperf3": "3.12", "ip": "6.1.0", "sockperf": Unknown, "ethtool": "6.1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("toolVersions (-want +got):\n%s", diff)
	}
	if len(f.calls) != len(Tools) {
		t.Errorf("ran %d commands, want one per tool (%d): %q", len(f.calls), len(Tools), f.calls)
	}
	for i, left := range f.deadlines {
		if left <= 0 || left > toolTimeout {
			t.Errorf("call %q ran with %v before its deadline, want at most %v", f.calls[i], left, toolTimeout)
		}
	}
}

// On this machine every tool on PATH must be listed, and no other.
func TestToolVersionsHost(t *testing.T) {
	got := toolVersions(context.Background(), ExecRunner{}, Tools)
	for _, tool := range Tools {
		_, err := exec.LookPath(tool.Argv[0])
		v, listed := got[tool.Name]
		switch {
		case err == nil && !listed:
			t.Errorf("%s is installed but not listed", tool.Name)
		case err != nil && listed:
			t.Errorf("%s is not installed but listed as %q", tool.Name, v)
		case listed && v == Unknown:
			// Either the output is not understood, or the 2 s timeout hit
			// on a loaded machine; only the first is a failure.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			out, _ := ExecRunner{}.Output(ctx, tool.Argv...)
			cancel()
			if _, ok := ParseVersion(out); !ok {
				t.Errorf("%s is installed but its version is not recognised in %q", tool.Name, out)
			}
		}
	}
}

func TestExecRunnerErrors(t *testing.T) {
	_, err := ExecRunner{}.Output(context.Background(), "tunbench-no-such-tool", "--version")
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing program: err = %v, want exec.ErrNotFound", err)
	}
	out, err := ExecRunner{}.Output(context.Background(), "sh", "-c", "echo $LC_ALL; echo oops >&2; exit 3")
	if err == nil {
		t.Fatal("exit 3 reported no error")
	}
	if string(out) != "C\noops\n" {
		t.Errorf("output = %q, want LC_ALL=C and stderr combined", out)
	}
	for _, want := range []string{`"sh" "-c"`, "exit status 3", "oops"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
