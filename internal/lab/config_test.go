package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var someKernel = Kernel{Image: "/k/vmlinuz-6.1.0-56-amd64", Modules: "/k/lib/modules/6.1.0-56-amd64", Version: "6.1.0-56-amd64"}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{Kernel: someKernel}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.MemoryMiB != 1024 || c.CPUs != 2 || c.Timeout != 10*time.Minute || c.Accel != AccelAuto || c.CacheDir != DefaultCacheDir() {
		t.Errorf("defaults = %+v", c)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"memory", Config{Kernel: someKernel, MemoryMiB: 255}, "memory 255 MiB: use 256 to 16384 MiB"},
		{"memory too large", Config{Kernel: someKernel, MemoryMiB: 16385}, "memory 16385 MiB: use 256 to 16384 MiB"},
		{"no kernel", Config{}, "no kernel"},
		{"cpus", Config{Kernel: someKernel, CPUs: -1}, "-1 CPUs"},
		{"timeout", Config{Kernel: someKernel, Timeout: -time.Second}, "negative timeout"},
		{"accel", Config{Kernel: someKernel, Accel: "hvf"}, `accelerator "hvf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
			// Run rejects it before touching anything.
			if _, err := Run(context.Background(), tt.cfg, Guest{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run: err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := (Config{Kernel: someKernel, MemoryMiB: 256}).withDefaults(); err != nil {
		t.Errorf("256 MiB rejected: %v", err)
	}
}

func TestGuestValidation(t *testing.T) {
	for _, g := range []Guest{
		{},
		{Argv: []string{""}},
		{Argv: []string{"A=B"}},
		{Argv: []string{"echo", "a\x00b"}},
		{Argv: []string{"true"}, Env: []string{"NOEQUALS"}},
		{Argv: []string{"true"}, Env: []string{"=x"}},
		{Argv: []string{"true"}, Dir: "relative"},
	} {
		if err := g.validate(); err == nil {
			t.Errorf("%+v accepted", g)
		}
	}
	if err := (Guest{Argv: []string{"true"}, Env: []string{"A="}, Dir: "/"}).validate(); err != nil {
		t.Errorf("valid guest rejected: %v", err)
	}
}

func TestRunRejectsBadKernelBeforeBooting(t *testing.T) {
	dir := t.TempDir()
	image := writeFile(t, dir, "vmlinux", append([]byte("\x7fELF"), make([]byte, 4096)...))
	k := Kernel{Image: image, Modules: dir, Version: "6.1.0-56-amd64"}
	_, err := Run(context.Background(), Config{Kernel: k}, Guest{Argv: []string{"true"}})
	if !errors.Is(err, ErrNotBzImage) {
		t.Errorf("err = %v, want ErrNotBzImage", err)
	}
}

func TestRunWithoutQemuNamesPackage(t *testing.T) {
	dir := t.TempDir()
	image := writeFile(t, dir, "boot/vmlinuz", fakeBzImage("6.1.0-56-amd64", nil))
	modules := filepath.Join(dir, "lib/modules/6.1.0-56-amd64")
	if err := os.MkdirAll(modules, 0o755); err != nil {
		t.Fatal(err)
	}
	k, err := FromPath(image, modules)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = Run(context.Background(), Config{Kernel: k}, Guest{Argv: []string{"true"}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install -y --no-install-recommends qemu-system-x86") {
		t.Errorf("err = %v, want ErrUnavailable naming qemu-system-x86", err)
	}
	if err := ToolsAvailable(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "qemu-system-x86") {
		t.Errorf("ToolsAvailable = %v, want it to name qemu-system-x86", err)
	}
}

func TestQemuArgs(t *testing.T) {
	spec := qemuSpec{
		Binary:    "/usr/bin/qemu-system-x86_64",
		Accel:     AccelTCG,
		Kernel:    "/c/vmlinux",
		Initramfs: "/w/initramfs.cpio",
		MemoryMiB: 1024,
		CPUs:      2,
		Results:   "/w,1/results",
	}
	want := []string{
		"-name", "tunbench-lab",
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-accel", "tcg,thread=multi", "-cpu", "max",
		"-m", "1024", "-smp", "2",
		"-kernel", "/c/vmlinux", "-initrd", "/w/initramfs.cpio",
		"-append", "console=ttyS0 quiet panic=-1 8250.nr_uarts=1",
		"-serial", "stdio", "-monitor", "none", "-nic", "none",
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path=/w,,1/results,mount_tag=results,security_model=none,multidevs=remap",
	}
	if d := cmp.Diff(want, spec.args()); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
	spec.Accel, spec.ExtraAppend = AccelKVM, "rdinit=/probe"
	got := strings.Join(spec.args(), " ")
	for _, w := range []string{"-accel kvm -cpu host", "8250.nr_uarts=1 rdinit=/probe"} {
		if !strings.Contains(got, w) {
			t.Errorf("kvm args %q lack %q", got, w)
		}
	}
	if strings.Contains(got, "-netdev") || strings.Contains(got, "-net ") || strings.Contains(got, "-nic user") {
		t.Errorf("guest has a network device: %s", got)
	}
}

func TestTailLines(t *testing.T) {
	var b strings.Builder
	for i := range 60 {
		b.WriteString(strings.Repeat("x", i%3) + "\n")
	}
	if n := len(strings.Split(tailLines([]byte(b.String()), 50), "\n")); n != 50 {
		t.Errorf("tailLines kept %d lines, want 50", n)
	}
	if got := tailLines([]byte("a\nb\n"), 50); got != "a\nb" {
		t.Errorf("tailLines short = %q", got)
	}
}

func TestChooseAccelTCG(t *testing.T) {
	got, err := chooseAccel(context.Background(), AccelTCG, qemuSpec{}, "")
	if err != nil || got != AccelTCG {
		t.Errorf("chooseAccel(tcg) = %q, %v", got, err)
	}
}

// TestKVMProbeKept: kvmBoots's answer, kept in the cache directory, is
// found again for the same boot, qemu and kernel, and not for another
// kernel, so a second process skips the probe (up to probeTimeout of a
// spinning qemu where KVM fails) only when nothing it depends on changed.
func TestKVMProbeKept(t *testing.T) {
	dir := t.TempDir()
	qemu, kernel := filepath.Join(dir, "qemu"), filepath.Join(dir, "vmlinux")
	for _, p := range []string{qemu, kernel} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := qemuSpec{Binary: qemu, Kernel: kernel}
	key, err := kvmProbeKey(spec)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "cache", kvmProbeFile)
	if _, found := readKVMProbe(file, key); found {
		t.Fatal("an answer found before any was written")
	}
	for _, want := range []bool{false, true} {
		if err := writeKVMProbe(file, key, want); err != nil {
			t.Fatal(err)
		}
		if ok, found := readKVMProbe(file, key); !found || ok != want {
			t.Errorf("after writing %v: read %v, found %v", want, ok, found)
		}
	}
	if err := os.WriteFile(kernel, []byte("another kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := kvmProbeKey(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, found := readKVMProbe(file, other); found {
		t.Errorf("the answer for one kernel was found for another:\n%s\n%s", key, other)
	}
	if _, err := kvmProbeKey(qemuSpec{Binary: filepath.Join(dir, "missing"), Kernel: kernel}); err == nil {
		t.Error("a key for a missing qemu binary")
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Errorf("cache directory holds %d entries, want the answer's file only", len(entries))
	}
}

func TestKVMProbeAnswers(t *testing.T) {
	// The ioctl probe must give an answer, not hang or crash, on any host;
	// where /dev/kvm is missing the answer is an error.
	err := kvmUsable()
	if _, statErr := os.Stat("/dev/kvm"); statErr != nil && err == nil {
		t.Errorf("no /dev/kvm but kvmUsable() = nil")
	}
	t.Logf("kvm ioctl probe: %v", err)
}
