package hostinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUInfo is what /proc/cpuinfo says about the processors.
type CPUInfo struct {
	Model string // "model name" of the first processor; "" if absent (arm64)
	Count int    // number of "processor" entries
}

// ParseCPUInfo parses the content of /proc/cpuinfo.
func ParseCPUInfo(data []byte) CPUInfo {
	var ci CPUInfo
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "processor":
			ci.Count++
		case "model name":
			if ci.Model == "" {
				ci.Model = strings.TrimSpace(val)
			}
		}
	}
	return ci
}

// ParseMemTotalMiB returns MemTotal from the content of /proc/meminfo in MiB.
func ParseMemTotalMiB(data []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "MemTotal:" {
			continue
		}
		if f[2] != "kB" {
			return 0, fmt.Errorf("parse meminfo: MemTotal in unit %q, want kB", f[2])
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse meminfo: MemTotal: %w", err)
		}
		return int(kb / 1024), nil
	}
	return 0, errors.New("parse meminfo: no MemTotal line")
}

// Sysctls are the networking settings recorded with every result.
var Sysctls = []string{
	"net.core.rmem_max",
	"net.core.wmem_max",
	"net.ipv4.tcp_congestion_control",
	"net.core.default_qdisc",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// readSysctls reads names from procDir/sys. Values are trimmed and inner
// whitespace is collapsed ("4096 131072 6291456"); a sysctl the kernel
// does not have is left out.
func readSysctls(procDir string, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range names {
		p := filepath.Join(procDir, "sys", strings.ReplaceAll(name, ".", "/"))
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", name, err)
		}
		out[name] = strings.Join(strings.Fields(string(b)), " ")
	}
	return out, nil
}
