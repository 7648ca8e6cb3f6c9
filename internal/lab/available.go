package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Available reports whether this host can run the lab: nil, or an error
// wrapping ErrUnavailable that names each missing piece (qemu,
// busybox-static, kmod, a kernel) and how to install it. It downloads
// nothing: a kernel counts as available when TUNBENCH_LAB_KERNEL and
// TUNBENCH_LAB_MODULES name a valid one, when Fetch has cached the default
// one, or when apt-get and dpkg can fetch it.
func Available() error {
	return errors.Join(ToolsAvailable(), kernelAvailable())
}

// ToolsAvailable is Available without the kernel check: it reports
// whether qemu, a static busybox and kmod are installed.
func ToolsAvailable() error {
	var errs []error
	if _, err := findQemu(); err != nil {
		errs = append(errs, err)
	}
	if err := checkStaticBusybox(BusyboxPath); err != nil {
		errs = append(errs, fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	for _, tool := range []string{"depmod", "modprobe"} {
		if _, err := lookPathSbin(tool); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s not found: apt-get install -y --no-install-recommends kmod", ErrUnavailable, tool))
		}
	}
	return errors.Join(errs...)
}

// kernelAvailable checks for a kernel without downloading one.
func kernelAvailable() error {
	if os.Getenv(EnvKernel) != "" || os.Getenv(EnvModules) != "" {
		if os.Getenv(EnvKernel) == "" || os.Getenv(EnvModules) == "" {
			return fmt.Errorf("%w: set both %s and %s, or neither", ErrUnavailable, EnvKernel, EnvModules)
		}
		if _, err := FromPath(os.Getenv(EnvKernel), os.Getenv(EnvModules)); err != nil {
			return fmt.Errorf("%w: %s/%s: %v", ErrUnavailable, EnvKernel, EnvModules, err)
		}
		return nil
	}
	cache := DefaultCacheDir()
	if rec, err := os.ReadFile(filepath.Join(cache, defaultPackageFile)); err == nil {
		if _, err := kernelIn(filepath.Join(cache, strings.TrimSpace(string(rec)))); err == nil {
			return nil
		}
	}
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: no kernel: set %s and %s, or run on Debian where %s can fetch one", ErrUnavailable, EnvKernel, EnvModules, tool)
		}
	}
	return nil
}

// lookPathSbin is exec.LookPath that also searches the sbin directories,
// which an unprivileged user's PATH often lacks.
func lookPathSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH, /usr/sbin or /sbin", name)
}
