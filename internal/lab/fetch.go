package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultKernelMeta is the Debian meta package whose first versioned
// dependency is the default guest kernel: on Debian 12 "linux-image-amd64"
// depends on the newest linux-image-6.1.0-N-amd64 in the archive. Pass a
// package name to Fetch to pick another (e.g. linux-image-6.12.N+deb12-amd64).
const DefaultKernelMeta = "linux-image-amd64"

// defaultPackageFile, inside the cache directory, records the last package
// resolved from DefaultKernelMeta, so a cached kernel stays usable when apt's
// package lists are missing.
const defaultPackageFile = "default-package"

var kernelPackageRE = regexp.MustCompile(`^linux-image-[a-z0-9][a-z0-9.+~-]*$`)

// DefaultCacheDir is where Fetch keeps kernels when given no directory:
// $XDG_CACHE_HOME/tunbench (usually ~/.cache/tunbench), or
// /var/cache/tunbench when there is no user cache directory.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tunbench")
	}
	return "/var/cache/tunbench"
}

// Fetch returns the kernel of Debian package pkg, unpacked under
// cacheDir/<pkg>/. An empty cacheDir means DefaultCacheDir; an empty pkg
// means the dependency of DefaultKernelMeta.
//
// The first call runs "apt-get download pkg", "dpkg -x" into the cache and
// "depmod -b"; it never installs anything on the host. Later calls only
// validate the cached copy. apt-get needs current package lists, so run
// "apt-get update" first. Concurrent calls for the same package are safe:
// each unpacks into its own temporary directory and the first to finish wins.
func Fetch(ctx context.Context, cacheDir, pkg string) (Kernel, error) {
	return fetch(ctx, execRunner{}, cacheDir, pkg)
}

func fetch(ctx context.Context, r runner, cacheDir, pkg string) (Kernel, error) {
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Kernel{}, fmt.Errorf("fetch kernel: cache directory: %w", err)
	}
	if pkg == "" {
		p, err := defaultPackage(ctx, r, cacheDir)
		if err != nil {
			return Kernel{}, err
		}
		pkg = p
	}
	if !kernelPackageRE.MatchString(pkg) {
		return Kernel{}, fmt.Errorf("fetch kernel: %q is not a Debian kernel package name: pass one like linux-image-6.1.0-56-amd64", pkg)
	}
	dir := filepath.Join(cacheDir, pkg)
	if _, err := os.Stat(dir); err == nil {
		k, err := kernelIn(dir)
		if err != nil {
			return Kernel{}, fmt.Errorf("fetch kernel: cached package %s is unusable: %w: remove %s and fetch again", pkg, err, dir)
		}
		return k, nil
	}
	if err := unpack(ctx, r, cacheDir, pkg, dir); err != nil {
		return Kernel{}, fmt.Errorf("fetch kernel %s: %w", pkg, err)
	}
	k, err := kernelIn(dir)
	if err != nil {
		return Kernel{}, fmt.Errorf("fetch kernel %s: %w", pkg, err)
	}
	return k, nil
}

// unpack downloads pkg, unpacks it and runs depmod in a temporary directory
// inside cacheDir, then renames that to dir.
func unpack(ctx context.Context, r runner, cacheDir, pkg, dir string) error {
	dl, err := os.MkdirTemp(cacheDir, ".download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dl)
	if _, err := r.run(ctx, dl, "apt-get", "download", pkg); err != nil {
		return fmt.Errorf("%w: run \"apt-get update\" first and check the package exists with \"apt-cache policy %s\"", err, pkg)
	}
	debs, err := filepath.Glob(filepath.Join(dl, "*.deb"))
	if err != nil || len(debs) != 1 {
		return fmt.Errorf("apt-get download %s left %d .deb files in %s, want 1", pkg, len(debs), dl)
	}
	stage, err := os.MkdirTemp(cacheDir, "."+pkg+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if _, err := r.run(ctx, "", "dpkg", "-x", debs[0], stage); err != nil {
		return err
	}
	image, err := findImage(stage)
	if err != nil {
		return err
	}
	version, err := ImageVersion(image)
	if err != nil {
		return err
	}
	if err := linkUsrLibModules(stage, version); err != nil {
		return err
	}
	if _, err := r.run(ctx, "", "depmod", "-b", stage, version); err != nil {
		return fmt.Errorf("%w (depmod is in kmod: apt-get install -y --no-install-recommends kmod)", err)
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	if err := os.Rename(stage, dir); err != nil {
		// Another Fetch finished first; its copy is as good as ours.
		if _, statErr := os.Stat(dir); statErr == nil {
			return nil
		}
		return err
	}
	return nil
}

// linkUsrLibModules makes root/lib/modules/<version> exist when a package
// ships its modules under usr/lib/modules only (merged-/usr packages),
// because depmod -b looks under lib/modules.
func linkUsrLibModules(root, version string) error {
	if _, err := os.Stat(filepath.Join(root, "lib", "modules", version)); err == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(root, "usr", "lib", "modules", version)); err != nil {
		return fmt.Errorf("package has no lib/modules/%s", version)
	}
	if _, err := os.Lstat(filepath.Join(root, "lib")); err == nil {
		return fmt.Errorf("package has usr/lib/modules/%s and a separate lib directory", version)
	}
	return os.Symlink("usr/lib", filepath.Join(root, "lib"))
}

// kernelIn validates an unpacked kernel package rooted at dir.
func kernelIn(dir string) (Kernel, error) {
	image, err := findImage(dir)
	if err != nil {
		return Kernel{}, err
	}
	version, err := ImageVersion(image)
	if err != nil {
		return Kernel{}, err
	}
	modules := filepath.Join(dir, "lib", "modules", version)
	if _, err := os.Stat(filepath.Join(modules, "modules.dep")); err != nil {
		return Kernel{}, fmt.Errorf("kernel modules %s have no modules.dep: run depmod -b %s %s", modules, dir, version)
	}
	return FromPath(image, modules)
}

// findImage returns the single boot/vmlinuz-* below root.
func findImage(root string) (string, error) {
	images, err := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if err != nil {
		return "", err
	}
	if len(images) != 1 {
		return "", fmt.Errorf("found %d boot/vmlinuz-* images in %s, want 1", len(images), root)
	}
	return images[0], nil
}

// defaultPackage resolves DefaultKernelMeta with apt-cache, recording the
// answer in the cache; without apt's lists it falls back to the recorded one.
func defaultPackage(ctx context.Context, r runner, cacheDir string) (string, error) {
	record := filepath.Join(cacheDir, defaultPackageFile)
	out, err := r.run(ctx, "", "apt-cache", "depends", DefaultKernelMeta)
	if err == nil {
		if pkg := parseDepends(out); pkg != "" {
			if err := os.WriteFile(record, []byte(pkg+"\n"), 0o644); err != nil {
				return "", fmt.Errorf("fetch kernel: record default package: %w", err)
			}
			return pkg, nil
		}
		err = fmt.Errorf("%q names no linux-image dependency: %s", []string{"apt-cache", "depends", DefaultKernelMeta}, out)
	}
	prev, readErr := os.ReadFile(record)
	if readErr == nil && kernelPackageRE.MatchString(strings.TrimSpace(string(prev))) {
		return strings.TrimSpace(string(prev)), nil
	}
	if readErr != nil && !errors.Is(readErr, fs.ErrNotExist) {
		return "", fmt.Errorf("fetch kernel: %w", readErr)
	}
	return "", fmt.Errorf("fetch kernel: resolve %s: %w: run \"apt-get update\" first", DefaultKernelMeta, err)
}

// parseDepends returns the first linux-image-* dependency in the output of
// "apt-cache depends".
func parseDepends(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.TrimPrefix(f[0], "|") == "Depends:" && kernelPackageRE.MatchString(f[1]) {
			return f[1]
		}
	}
	return ""
}
