package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// QemuBinary is the emulator the lab runs, from Debian's qemu-system-x86.
const QemuBinary = "qemu-system-x86_64"

// kernelCmdline is the guest kernel's command line. panic=-1 with qemu's
// -no-reboot turns a panic into a qemu exit instead of a hang.
const kernelCmdline = "console=ttyS0 quiet panic=-1 8250.nr_uarts=1"

// qemuSpec is everything the qemu command line depends on.
type qemuSpec struct {
	Binary    string
	Accel     string // AccelKVM or AccelTCG
	Kernel    string
	Initramfs string
	MemoryMiB int
	CPUs      int
	Results   string // host directory exported read-write as tag "results"
	// ExtraAppend is added to the kernel command line.
	ExtraAppend string
}

// args is qemu's argument list. The guest gets no network device (-nic
// none, -nodefaults), the serial console on stdio, the host root read-only
// as 9p tag "hostroot" and the results directory read-write as "results".
func (s qemuSpec) args() []string {
	a := []string{
		"-name", "tunbench-lab",
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
	}
	if s.Accel == AccelKVM {
		a = append(a, "-accel", "kvm", "-cpu", "host")
	} else {
		a = append(a, "-accel", "tcg,thread=multi", "-cpu", "max")
	}
	return append(a,
		"-m", strconv.Itoa(s.MemoryMiB),
		"-smp", strconv.Itoa(s.CPUs),
		"-kernel", s.Kernel,
		"-initrd", s.Initramfs,
		"-append", strings.TrimSpace(kernelCmdline+" "+s.ExtraAppend),
		"-serial", "stdio",
		"-monitor", "none",
		"-nic", "none",
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path="+qemuOptEscape(s.Results)+",mount_tag=results,security_model=none,multidevs=remap",
	)
}

// qemuOptEscape doubles commas, qemu's escape inside option values.
func qemuOptEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// findQemu locates the emulator in PATH.
func findQemu() (string, error) {
	p, err := exec.LookPath(QemuBinary)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found: apt-get install -y --no-install-recommends qemu-system-x86", ErrUnavailable, QemuBinary)
	}
	return p, nil
}

// chooseAccel resolves Config.Accel to AccelKVM or AccelTCG. Auto takes KVM
// only when it proves to run guests: first the ioctl probe (kvmUsable), then
// a boot of the real kernel under KVM (kvmBoots, given spec; its answer is
// kept in cacheDir when that is not empty).
func chooseAccel(ctx context.Context, accel string, spec qemuSpec, cacheDir string) (string, error) {
	switch accel {
	case AccelTCG:
		return AccelTCG, nil
	case AccelKVM:
		if err := kvmUsable(); err != nil {
			return "", fmt.Errorf("lab: accelerator kvm requested: %w", err)
		}
		return AccelKVM, nil
	}
	if kvmUsable() != nil {
		return AccelTCG, nil
	}
	ok, err := kvmBoots(ctx, spec, cacheDir)
	if err != nil {
		return "", err
	}
	if ok {
		return AccelKVM, nil
	}
	return AccelTCG, nil
}

// probeInit is an initramfs program that prints probeMarker and powers off.
const (
	probeInit    = "/probe"
	probeMarker  = markerPrefix + "kvm probe ok"
	probeScript  = "#!/bin/sh\necho '" + probeMarker + "'\n/bin/poweroff -f\n"
	probeTimeout = 30 * time.Second
)

var (
	kvmBootMu    sync.Mutex
	kvmBootKnown bool
	kvmBootOK    bool
)

// kvmBoots reports whether the kernel and initramfs of spec boot under KVM
// to the point of running a program. Where /dev/kvm works for the ioctl
// probe but not for real guests (qemu dies with "KVM internal error" or
// cannot set MSRs under some nested hypervisors, or spins until
// probeTimeout), this costs one failed qemu start of up to probeTimeout
// with a core busy; where KVM works, one boot of a second or two. The
// answer is kept for the life of the process and, when cacheDir is not
// empty, in its kvmProbeFile for the rest of the host's boot, keyed by
// the boot, qemu and the kernel (kvmProbeKey): every "tunbench run
// --testbed vm" and every test process that boots a guest would pay the
// failed probe again. It is safe for concurrent use.
func kvmBoots(ctx context.Context, spec qemuSpec, cacheDir string) (bool, error) {
	kvmBootMu.Lock()
	defer kvmBootMu.Unlock()
	if kvmBootKnown {
		return kvmBootOK, nil
	}
	key, keyErr := kvmProbeKey(spec)
	file := filepath.Join(cacheDir, kvmProbeFile)
	if cacheDir != "" && keyErr == nil {
		// One process probes at a time, so the others find its answer.
		if unlock, err := lockFile(file + ".lock"); err == nil {
			defer unlock()
		}
		if ok, found := readKVMProbe(file, key); found {
			kvmBootKnown, kvmBootOK = true, ok
			return ok, nil
		}
	}
	spec.Accel = AccelKVM
	ok, err := probeBoot(ctx, spec, probeTimeout)
	if err != nil {
		return false, fmt.Errorf("lab: kvm probe: %w", err)
	}
	kvmBootKnown, kvmBootOK = true, ok
	if cacheDir != "" && keyErr == nil {
		// The file only saves the next process a probe: when it cannot
		// be written, that process probes again, which is correct.
		_ = writeKVMProbe(file, key, ok)
	}
	return ok, nil
}

// kvmProbeFile is the file in the cache directory that keeps kvmBoots's
// answer.
const kvmProbeFile = "kvm-probe"

// kvmProbeKey identifies what kvmBoots's answer depends on: the host's
// boot (/proc/sys/kernel/random/boot_id: a reboot, perhaps onto another
// hypervisor, probes again), the qemu binary and the kernel it booted
// (each by path, size and modification time).
func kvmProbeKey(spec qemuSpec) (string, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	key := "boot " + strings.TrimSpace(string(boot))
	for _, p := range []string{spec.Binary, spec.Kernel} {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		key += fmt.Sprintf("\nfile %s %d %d", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return key, nil
}

// readKVMProbe returns the answer file keeps for key; found is false when
// the file is missing, unreadable or written for another key.
func readKVMProbe(file, key string) (ok, found bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return false, false
	}
	k, answer, cut := strings.Cut(strings.TrimSuffix(string(b), "\n"), "\nkvm boots: ")
	if !cut || k != key {
		return false, false
	}
	switch answer {
	case "yes":
		return true, true
	case "no":
		return false, true
	}
	return false, false
}

// lockFile takes an exclusive lock on path (created if missing), waiting
// while another process holds it; unlock releases it.
func lockFile(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// writeKVMProbe keeps answer ok for key in file, atomically (processes
// probing at once each write a whole file).
func writeKVMProbe(file, key string, ok bool) error {
	answer := "no"
	if ok {
		answer = "yes"
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), kvmProbeFile+".*")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(tmp, "%s\nkvm boots: %s\n", key, answer)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// probeBoot boots spec's kernel into the initramfs's probe program and
// reports whether it ran. The error is only for a cancelled ctx.
func probeBoot(ctx context.Context, spec qemuSpec, timeout time.Duration) (bool, error) {
	spec.ExtraAppend = strings.TrimSpace(spec.ExtraAppend + " rdinit=" + probeInit)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := runQemu(pctx, spec, probeMarker, nil)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return err == nil && res.bootTime > 0, nil
}

// qemuResult is what runQemu observed.
type qemuResult struct {
	console  []byte
	bootTime time.Duration // 0 when the start marker never appeared
}

// ansiEscape matches the terminal control sequences SeaBIOS and the kernel
// print on the serial console (reset, clear screen, wrap mode).
var ansiEscape = regexp.MustCompile(`\x1b(\[[0-9;?]*[A-Za-z]|[c78])`)

// softLockup matches the guest kernel watchdog's soft-lockup line, its
// count of seconds in the group.
var softLockup = regexp.MustCompile(`soft lockup - CPU#\d+ stuck for (\d+)s`)

// lockedUp reports whether a console line is the watchdog's report of a
// CPU stuck for LockupLimit or more.
func lockedUp(line []byte) bool {
	m := softLockup.FindSubmatch(line)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(string(m[1]))
	return err == nil && time.Duration(n)*time.Second >= LockupLimit
}

// maxQemuStderr bounds what is kept of qemu's own stderr.
const maxQemuStderr = 64 << 10

// runQemu runs qemu in its own process group until it exits or ctx is done,
// then kills the group. It collects the serial console (carriage returns
// dropped), copies it to tee when not nil, and times the marker line. qemu
// also gets SIGKILL if the calling thread dies, so a crashed caller leaves
// no guest behind. A console line reporting a CPU locked up for
// LockupLimit kills the group at once: the error wraps ErrGuestLockup.
func runQemu(ctx context.Context, spec qemuSpec, marker string, tee io.Writer) (qemuResult, error) {
	// Pdeathsig fires when the thread that started the child exits; keep
	// this goroutine on that thread until qemu is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	argv := append([]string{spec.Binary}, spec.args()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr limitedBuffer
	stderr.max = maxQemuStderr
	cmd.Stderr = &stderr
	pr, pw, err := os.Pipe()
	if err != nil {
		return qemuResult{}, fmt.Errorf("qemu: %w", err)
	}
	defer pr.Close()
	cmd.Stdout = pw

	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return qemuResult{}, fmt.Errorf("qemu: start %q: %w", argv, err)
	}
	pw.Close()
	group := cmd.Process.Pid

	var (
		mu      sync.Mutex
		console bytes.Buffer
		boot    time.Duration
		lockup  []byte // the watchdog's line, when the guest locked up
	)
	lockedUpCh := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		br := bufio.NewReader(pr)
		for {
			line, err := br.ReadBytes('\n')
			line = ansiEscape.ReplaceAll(bytes.ReplaceAll(line, []byte("\r"), nil), nil)
			if len(line) > 0 {
				mu.Lock()
				console.Write(line)
				if boot == 0 && bytes.HasSuffix(bytes.TrimSpace(line), []byte(marker)) {
					boot = time.Since(start)
				}
				if lockup == nil && lockedUp(line) {
					lockup = bytes.TrimSpace(line)
					close(lockedUpCh)
				}
				mu.Unlock()
				if tee != nil {
					tee.Write(line)
				}
			}
			if err != nil {
				return
			}
		}
	}()

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	var waitErr error
	killed := false
	select {
	case waitErr = <-waitDone:
	case <-ctx.Done():
		killed = true
		syscall.Kill(-group, syscall.SIGKILL)
		waitErr = <-waitDone
	case <-lockedUpCh:
		syscall.Kill(-group, syscall.SIGKILL)
		waitErr = <-waitDone
	}
	// Anything qemu left in its group goes too; ESRCH means nothing did.
	if err := syscall.Kill(-group, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return qemuResult{}, fmt.Errorf("qemu: kill process group %d: %w", group, err)
	}
	<-readDone

	mu.Lock()
	res := qemuResult{console: bytes.Clone(console.Bytes()), bootTime: boot}
	mu.Unlock()
	switch {
	case lockup != nil:
		return res, fmt.Errorf("qemu killed: %w after %v (a CPU stuck for %v or more): %s", ErrGuestLockup, time.Since(start).Round(time.Second), LockupLimit, lockup)
	case killed:
		return res, fmt.Errorf("qemu killed: %w", ctx.Err())
	case waitErr != nil:
		return res, fmt.Errorf("qemu %q: %w: %s", argv, waitErr, bytes.TrimSpace(stderr.Bytes()))
	}
	return res, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
