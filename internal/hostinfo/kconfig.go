package hostinfo

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNoKernelConfig means neither /proc/config.gz nor
// /boot/config-$(uname -r) exists.
var ErrNoKernelConfig = errors.New("no kernel config: neither /proc/config.gz nor /boot/config-<release>")

// ParseKernelConfig parses a kernel .config: "CONFIG_X=v" maps CONFIG_X to
// v (string values unquoted), "# CONFIG_X is not set" maps it to "n", and
// options the file does not mention are absent.
func ParseKernelConfig(data []byte) map[string]string {
	cfg := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "# "); ok {
			if name, ok = strings.CutSuffix(name, " is not set"); ok && strings.HasPrefix(name, "CONFIG_") {
				cfg[name] = "n"
			}
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(name, "CONFIG_") {
			continue
		}
		if s, err := strconv.Unquote(val); err == nil {
			val = s
		}
		cfg[name] = val
	}
	return cfg
}

// HasKernelFeature reports whether option is built in ("y") or a module
// ("m"). The "CONFIG_" prefix may be left out. Whether a module can really
// be loaded is Modules.FeatureUsable's question.
func HasKernelFeature(cfg map[string]string, option string) bool {
	v := cfg[configName(option)]
	return v == "y" || v == "m"
}

func configName(option string) string {
	if strings.HasPrefix(option, "CONFIG_") {
		return option
	}
	return "CONFIG_" + option
}

// LoadKernelConfig reads the running kernel's configuration from
// /proc/config.gz, else from /boot/config-$(uname -r), and fails with
// ErrNoKernelConfig when neither exists.
func LoadKernelConfig() (map[string]string, error) {
	rel, err := release()
	if err != nil {
		return nil, err
	}
	return LoadKernelConfigFrom(LocalFiles{}, rel)
}

// LoadKernelConfigFrom reads, through files, the configuration of a host
// whose kernel is release (its `uname -r`): the same files and order as
// LoadKernelConfig, on that host.
func LoadKernelConfigFrom(files Files, release string) (map[string]string, error) {
	return loadKernelConfigFrom(files, procConfigGz, bootConfig(release))
}

const procConfigGz = "/proc/config.gz"

func bootConfig(release string) string { return path.Join("/boot", "config-"+release) }

func loadKernelConfig(procGz, bootPath string) (map[string]string, error) {
	return loadKernelConfigFrom(LocalFiles{}, procGz, bootPath)
}

func loadKernelConfigFrom(files Files, procGz, bootPath string) (map[string]string, error) {
	gz, err := files.ReadFile(procGz)
	if err == nil {
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			return nil, fmt.Errorf("read kernel config %s: %w", procGz, err)
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("read kernel config %s: %w", procGz, err)
		}
		return ParseKernelConfig(data), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read kernel config: %w", err)
	}
	data, err := files.ReadFile(bootPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoKernelConfig
	}
	if err != nil {
		return nil, fmt.Errorf("read kernel config: %w", err)
	}
	return ParseKernelConfig(data), nil
}

// release returns `uname -r`.
func release() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}
