package lab_test

import (
	"bufio"
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/lab/labtest"
)

// These tests read the real Debian kernel (TUNBENCH_LAB_KERNEL, or the one
// Fetch caches) without booting it.

func TestRealKernelHeader(t *testing.T) {
	k := labtest.Kernel(t)
	v, err := lab.ImageVersion(k.Image)
	if err != nil {
		t.Fatal(err)
	}
	if v != filepath.Base(k.Modules) {
		t.Errorf("header version %q, modules dir %s", v, k.Modules)
	}
	if name, ok := strings.CutPrefix(filepath.Base(k.Image), "vmlinuz-"); ok && name != v {
		t.Errorf("header version %q, but the image is named %s", v, filepath.Base(k.Image))
	}
	// The modules dir of another kernel is refused with both versions named.
	other := filepath.Join(t.TempDir(), "5.10.0-0-amd64")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.FromPath(k.Image, other); err == nil || !strings.Contains(err.Error(), v) || !strings.Contains(err.Error(), "5.10.0-0-amd64") {
		t.Errorf("mismatched modules: err = %v", err)
	}
}

// readDeps parses modules.dep independently of the package: module path ->
// dependency paths.
func readDeps(t *testing.T, modulesDir string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(modulesDir, "modules.dep"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	deps := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mod, rest, _ := strings.Cut(sc.Text(), ":")
		deps[mod] = strings.Fields(rest)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return deps
}

func TestRealModulesClosure(t *testing.T) {
	k := labtest.Kernel(t)
	order, err := lab.BootModuleOrder(k.Modules)
	if err != nil {
		t.Fatal(err)
	}
	deps := readDeps(t, k.Modules)
	pos := map[string]int{}
	for i, m := range order {
		pos[m] = i
	}
	for i, m := range order {
		for _, d := range deps[m] {
			if j, ok := pos[d]; !ok || j > i {
				t.Errorf("%s is loaded at %d but its dependency %s at %d (present: %v)", m, i, d, j, ok)
			}
		}
	}
	var names []string
	for _, m := range order {
		names = append(names, strings.SplitN(path.Base(m), ".ko", 2)[0])
	}
	if strings.HasPrefix(k.Version, "6.1.0-") {
		want := []string{"9p", "9pnet", "9pnet_virtio", "fscache", "netfs", "overlay", "virtio", "virtio_pci", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_ring"}
		if d := cmp.Diff(want, slices.Sorted(slices.Values(names))); d != "" {
			t.Errorf("6.1 boot modules (-want +got):\n%s", d)
		}
	}
	t.Logf("kernel %s loads %v", k.Version, names)
}

func TestRealPVHImage(t *testing.T) {
	k := labtest.Kernel(t)
	p, err := lab.PVHImage(context.Background(), k.Image, t.TempDir())
	if err != nil {
		t.Fatalf("Debian's kernels are PVH-bootable: %v", err)
	}
	if err := lab.CheckPVH(p); err != nil {
		t.Error(err)
	}
	// Cached: the second call returns the same file.
	p2, err := lab.PVHImage(context.Background(), k.Image, filepath.Dir(p))
	if err != nil || p2 != p {
		t.Errorf("second extraction = %q, %v; want %q", p2, err, p)
	}
}
