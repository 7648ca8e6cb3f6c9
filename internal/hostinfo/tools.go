package hostinfo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"sync"
	"time"
)

// Tool is a program whose version is recorded when it is installed.
type Tool struct {
	Name string   // key in Host.Tools
	Argv []string // prints the version and exits
}

// Tools are the load generators, configuration tools and tunnel daemons
// tunbench may use. strongSwan is identified by swanctl: its daemon charon
// has no version flag and would start when run.
var Tools = []Tool{
	{"iperf3", []string{"iperf3", "--version"}},
	{"sockperf", []string{"sockperf", "--version"}},
	{"netperf", []string{"netperf", "-V"}},
	{"ip", []string{"ip", "-V"}},
	{"ethtool", []string{"ethtool", "--version"}},
	{"qemu-system-x86_64", []string{"qemu-system-x86_64", "--version"}},
	{"wg", []string{"wg", "--version"}},
	{"wireguard-go", []string{"wireguard-go", "--version"}},
	{"swanctl", []string{"swanctl", "--version"}},
	{"ovs-vswitchd", []string{"ovs-vswitchd", "--version"}},
	{"openvpn", []string{"openvpn", "--version"}},
	{"boringtun-cli", []string{"boringtun-cli", "--version"}},
	{"nebula", []string{"nebula", "-version"}},
	{"tailscaled", []string{"tailscaled", "--version"}},
}

// toolTimeout bounds each version command.
const toolTimeout = 2 * time.Second

// Unknown is recorded for a tool that ran but printed no version.
const Unknown = "unknown"

// versionRE matches a dotted version number, optionally after a "v" and
// before a suffix such as "-no.git" or "+dfsg". It must start a word or
// follow a '-' ("iproute2-6.1.0").
var versionRE = regexp.MustCompile(`(?:^|[\s,(\-])v?(\d+\.\d+(?:\.\d+)*(?:[-+~][0-9A-Za-z][0-9A-Za-z.+~-]*)?)`)

// ParseVersion returns the version on the first line of a tool's version
// output that carries one: "3.12" from "iperf 3.12 (cJSON 1.7.15)", "6.1.0"
// from "ip utility, iproute2-6.1.0, libbpf 1.1.2", "3.7-no.git" from
// "sockperf, version 3.7-no.git". It reports false when no line does.
func ParseVersion(out []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := versionRE.FindStringSubmatch(sc.Text()); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// toolVersions runs every tool's version command concurrently and returns
// the versions of the installed ones.
func toolVersions(ctx context.Context, r Runner, tools []Tool) map[string]string {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = map[string]string{}
	)
	for _, t := range tools {
		wg.Go(func() {
			v, ok := toolVersion(ctx, r, t)
			if !ok {
				return
			}
			mu.Lock()
			out[t.Name] = v
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// toolVersion reports false when the tool is not installed. A tool that
// fails or times out but printed a version still counts (openvpn --version
// exits 1); one that printed none is Unknown.
func toolVersion(ctx context.Context, r Runner, t Tool) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	out, err := r.Output(ctx, t.Argv...)
	if errors.Is(err, exec.ErrNotFound) {
		return "", false
	}
	if v, ok := ParseVersion(out); ok {
		return v, true
	}
	return Unknown, true
}
