package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeAPT plays apt-cache, apt-get download, dpkg -x and depmod on a fake
// kernel package, and records what it was asked to run.
type fakeAPT struct {
	version     string
	downloadErr error
	calls       []string
}

func (f *fakeAPT) run(_ context.Context, dir string, argv ...string) ([]byte, error) {
	cmd := filepath.Base(argv[0])
	f.calls = append(f.calls, strings.Join(append([]string{cmd}, argv[1:]...), " "))
	switch cmd {
	case "apt-cache":
		return []byte("linux-image-amd64\n  Depends: linux-image-" + f.version + "\n"), nil
	case "apt-get":
		if f.downloadErr != nil {
			return nil, f.downloadErr
		}
		return nil, os.WriteFile(filepath.Join(dir, argv[2]+"_1_amd64.deb"), []byte("deb"), 0o644)
	case "dpkg":
		root := argv[3]
		if err := os.MkdirAll(filepath.Join(root, "boot"), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(root, "boot", "vmlinuz-"+f.version), fakeBzImage(f.version, nil), 0o644); err != nil {
			return nil, err
		}
		return nil, os.MkdirAll(filepath.Join(root, "lib", "modules", f.version, "kernel"), 0o755)
	case "depmod":
		return nil, os.WriteFile(filepath.Join(argv[2], "lib", "modules", argv[3], "modules.dep"), nil, 0o644)
	}
	return nil, fmt.Errorf("fakeAPT: unexpected command %q", argv)
}

func TestFetchUnpacksOnceThenValidates(t *testing.T) {
	cache := t.TempDir()
	f := &fakeAPT{version: "6.1.0-56-amd64"}
	k, err := fetch(context.Background(), f, cache, "")
	if err != nil {
		t.Fatal(err)
	}
	pkgDir := filepath.Join(cache, "linux-image-6.1.0-56-amd64")
	want := Kernel{
		Image:   filepath.Join(pkgDir, "boot", "vmlinuz-6.1.0-56-amd64"),
		Modules: filepath.Join(pkgDir, "lib", "modules", "6.1.0-56-amd64"),
		Version: "6.1.0-56-amd64",
	}
	if k != want {
		t.Errorf("kernel = %+v\nwant %+v", k, want)
	}
	// The argv of dpkg and depmod name temporary directories; compare the
	// command shapes.
	var shapes []string
	for _, c := range f.calls {
		shapes = append(shapes, strings.Join(strings.Fields(c)[:2], " "))
	}
	if d := cmp.Diff([]string{"apt-cache depends", "apt-get download", "dpkg -x", "depmod -b"}, shapes); d != "" {
		t.Errorf("commands (-want +got):\n%s", d)
	}
	leftovers, _ := filepath.Glob(filepath.Join(cache, ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left in the cache: %v", leftovers)
	}

	f.calls = nil
	k2, err := fetch(context.Background(), f, cache, "linux-image-6.1.0-56-amd64")
	if err != nil {
		t.Fatal(err)
	}
	if k2 != k || len(f.calls) != 0 {
		t.Errorf("second fetch: kernel %+v, commands %q; want the cached kernel and no commands", k2, f.calls)
	}

	// Without apt's lists the recorded default package still resolves.
	f.calls = nil
	broken := &brokenAptCache{fakeAPT: f}
	if _, err := fetch(context.Background(), broken, cache, ""); err != nil {
		t.Errorf("fetch with apt-cache failing and a recorded default: %v", err)
	}
}

type brokenAptCache struct{ *fakeAPT }

func (b *brokenAptCache) run(ctx context.Context, dir string, argv ...string) ([]byte, error) {
	if filepath.Base(argv[0]) == "apt-cache" {
		return nil, errors.New(`"apt-cache": no lists`)
	}
	return b.fakeAPT.run(ctx, dir, argv...)
}

func TestFetchDownloadFailureNamesFix(t *testing.T) {
	cache := t.TempDir()
	f := &fakeAPT{version: "6.1.0-56-amd64", downloadErr: errors.New(`["apt-get" "download" "linux-image-6.1.0-56-amd64"]: exit status 100: E: Unable to locate package`)}
	_, err := fetch(context.Background(), f, cache, "linux-image-6.1.0-56-amd64")
	for _, want := range []string{"Unable to locate package", `run "apt-get update" first`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 0 {
		t.Errorf("cache not clean after a failed fetch: %v", entries)
	}
}

func TestFetchRejectsBadPackageNames(t *testing.T) {
	for _, pkg := range []string{"../etc", "linux-image-x/../../y", "bash"} {
		if _, err := fetch(context.Background(), &fakeAPT{}, t.TempDir(), pkg); err == nil {
			t.Errorf("fetch(%q): no error", pkg)
		}
	}
}

func TestParseDepends(t *testing.T) {
	// Captured from "apt-cache depends linux-image-amd64" on Debian 12.
	out := "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n"
	if got := parseDepends([]byte(out)); got != "linux-image-6.1.0-56-amd64" {
		t.Errorf("parseDepends = %q", got)
	}
	if got := parseDepends([]byte("linux-image-amd64\n  Recommends: firmware-linux-free\n")); got != "" {
		t.Errorf("parseDepends without a kernel = %q, want empty", got)
	}
}
