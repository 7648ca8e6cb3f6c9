package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Version is the Kubernetes release the cluster runs: the k8s.io/kubernetes
// module version tools/k8s pins, stamped into the binaries.
const Version = "v1.34.4"

// Programs are the Kubernetes binaries Binaries builds.
var Programs = []string{"kube-apiserver", "kube-controller-manager", "kubelet"}

// ldflags stamp the version the binaries report (without them the kubelet
// says v0.0.0-master+$Format:%H$).
const ldflags = "-X k8s.io/component-base/version.gitVersion=" + Version +
	" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"

// CacheDir is where Binaries keeps the binaries:
// $XDG_CACHE_HOME/tunbench/k8s-<Version> (~/.cache when unset).
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kubetest: cache directory: %w", err)
	}
	return filepath.Join(base, "tunbench", "k8s-"+Version), nil
}

// Binaries returns the directory holding kube-apiserver,
// kube-controller-manager and kubelet of Version, building them from the
// wrapper module tools/k8s (niced, version stamped) when they are missing.
// A file lock in the directory makes concurrent callers (parallel test
// packages, scripts/k8s-binaries.sh) build once. A cold build takes about
// 12 minutes on two cores; with Go's build cache warm, under a minute.
func Binaries(ctx context.Context) (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	if complete(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("kubetest: create %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("kubetest: lock %s: %w", dir, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("kubetest: lock %s: %w", dir, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if complete(dir) { // another process built them meanwhile
		return dir, nil
	}
	mod, err := wrapperModule()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	defer os.RemoveAll(tmp)
	args := []string{"-n", "19", goTool(), "build", "-ldflags", ldflags, "-o", tmp + "/"}
	for _, p := range Programs {
		args = append(args, "k8s.io/kubernetes/cmd/"+p)
	}
	cmd := exec.CommandContext(ctx, "nice", args...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubetest: build kubernetes %s in %s: %w: %s", Version, mod, err, strings.TrimSpace(out.String()))
	}
	for _, p := range Programs {
		if err := os.Rename(filepath.Join(tmp, p), filepath.Join(dir, p)); err != nil {
			return "", fmt.Errorf("kubetest: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".complete"), []byte(Version+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	return dir, nil
}

// complete reports whether dir holds every binary of a finished build.
func complete(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return false
	}
	for _, p := range Programs {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// goTool is the go command: the one on PATH, else the one of the Go
// installation that built this program.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// repoRoot finds the tunbench module's root: from this source file when
// the binary knows it, else upwards from the working directory.
func repoRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, d := range starts {
		for {
			data, err := os.ReadFile(filepath.Join(d, "go.mod"))
			if err == nil && bytes.HasPrefix(data, []byte("module github.com/tunbench/tunbench\n")) {
				return d, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", errors.New("kubetest: cannot find the tunbench module's root (go.mod)")
}

// wrapperModule is the directory of tools/k8s.
func wrapperModule() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "tools", "k8s"), nil
}
