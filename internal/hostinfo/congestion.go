package hostinfo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// availableCongestionPath lists the TCP congestion control algorithms the
// running kernel offers (built in, or modules already loaded).
const availableCongestionPath = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// ParseCongestionList splits the contents of
// net.ipv4.tcp_available_congestion_control ("reno cubic bbr").
func ParseCongestionList(data []byte) []string {
	return strings.Fields(string(data))
}

// MissingCongestion returns the algorithms of want that avail lacks, in
// want's order ("" stands for the host's default and is never missing).
func MissingCongestion(want, avail []string) []string {
	var out []string
	for _, w := range want {
		if w != "" && !slices.Contains(avail, w) {
			out = append(out, w)
		}
	}
	return out
}

// AvailableCongestion returns the congestion control algorithms this
// machine offers once it has tried to load the module (tcp_NAME) of each
// algorithm of want it lacks; a module that does not load leaves the
// algorithm missing, for the caller to report.
func AvailableCongestion(ctx context.Context, want []string) ([]string, error) {
	data, err := os.ReadFile(availableCongestionPath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", availableCongestionPath, err)
	}
	avail := ParseCongestionList(data)
	missing := MissingCongestion(want, avail)
	if len(missing) == 0 {
		return avail, nil
	}
	for _, m := range missing {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = exec.CommandContext(ctx, "modprobe", "tcp_"+m).Run() // its absence is reported below
		cancel()
	}
	if data, err = os.ReadFile(availableCongestionPath); err != nil {
		return nil, fmt.Errorf("read %s: %w", availableCongestionPath, err)
	}
	return ParseCongestionList(data), nil
}

// CongestionError words the algorithms a host lacks, naming those it
// offers and the fix; nil when nothing is missing.
func CongestionError(host string, missing, avail []string) error {
	if len(missing) == 0 {
		return nil
	}
	where := "this host"
	if host != "" {
		where = "host " + host
	}
	return fmt.Errorf("congestion_control: %s does not offer %s (loading tcp_%s failed); it offers %s: choose among those, or build or install the module",
		where, strings.Join(missing, ", "), strings.Join(missing, ", tcp_"), strings.Join(avail, ", "))
}
