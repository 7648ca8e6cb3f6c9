package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults and limits of Config.
const (
	DefaultMemoryMiB = 1024
	MinMemoryMiB     = 256
	// MaxMemoryMiB is the most a guest may ask for: qemu reserves it up
	// front, and this machine kind has 24 GiB.
	MaxMemoryMiB   = 16384
	DefaultCPUs    = 2
	DefaultTimeout = 10 * time.Minute
	// MinRunTimeout is the least time a whole run in a guest may be
	// given (--vm-timeout): the boot, and the run's own stop and
	// teardown before the guest is killed.
	MinRunTimeout = 5 * time.Minute
)

// Accelerators for Config.Accel.
const (
	AccelAuto = "auto" // KVM when it really runs guests here, else TCG
	AccelKVM  = "kvm"
	AccelTCG  = "tcg" // software emulation: -accel tcg,thread=multi -cpu max
)

// ErrUnavailable marks a host that lacks what the lab needs (qemu,
// busybox-static, a kernel). Errors wrapping it name the missing piece and
// the command that installs it.
var ErrUnavailable = errors.New("kernel lab unavailable")

// ErrGuestLockup is the error of a Run whose guest kernel reported a CPU
// stuck for LockupLimit or more (its soft-lockup watchdog's "BUG: soft
// lockup - CPU#0 stuck for 2063s!"). Such a guest never comes back: Run
// kills it at once, with the watchdog's line, instead of waiting out the
// timeout. Under software emulation a guest has hung so in softirq (a
// ping through netem), once in several clean-clone runs of the same tests.
var ErrGuestLockup = errors.New("the guest kernel locked up")

// LockupLimit is how long a CPU the guest's watchdog reports stuck must
// have been so before Run gives the guest up. The watchdog speaks after
// 20 s, and an emulated guest on a loaded host can report 20-60 s once
// and recover; a stuck CPU is reported again every 20-30 s with a
// growing count.
const LockupLimit = 180 * time.Second

// Config is how to boot the guest. The zero value of each field except
// Kernel means its default.
type Config struct {
	Kernel Kernel
	// MemoryMiB is the guest's memory (default 1024, at least 256).
	MemoryMiB int
	// CPUs is the number of virtual CPUs (default 2).
	CPUs int
	// Timeout bounds the whole run, boot to power-off (default 10 min).
	Timeout time.Duration
	// Accel is AccelAuto (the default), AccelKVM or AccelTCG.
	Accel string
	// WorkDir holds the initramfs and, in ResultsDir(WorkDir), the results
	// share; files placed there before Run are visible to the guest under
	// GuestResultsDir. Empty means a new temporary directory.
	WorkDir string
	// CacheDir holds the uncompressed kernels the lab boots faster (see
	// pvh.go); default DefaultCacheDir().
	CacheDir string
	// KeepWorkDir keeps everything Run created in WorkDir after it returns.
	// Otherwise Run removes its own files and, when it made WorkDir itself,
	// WorkDir too; a caller's WorkDir keeps what the guest wrote there.
	KeepWorkDir bool
	// Console, when not nil, receives the serial console as it arrives.
	Console io.Writer
}

// Guest is the command to run in the guest, as root, with stdin from
// /dev/null.
type Guest struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH.
	Argv []string
	// Env is added to a minimal environment (PATH, HOME=/root, TERM=dumb,
	// TUNBENCH_IN_LAB=1) and wins over it; entries are KEY=VALUE.
	Env []string
	// Dir is the working directory (default /). Host paths are the same in
	// the guest, except /run, which is fresh and empty there (/tmp shows the
	// host's files; what the guest writes there stays in the guest).
	Dir string
}

// Outcome is what a guest run produced.
type Outcome struct {
	// ExitCode is the guest command's exit status (128+N for signal N).
	ExitCode int
	// Stdout and Stderr are the command's output, from the results share.
	Stdout, Stderr []byte
	// Console is the serial console: kernel and boot messages only.
	Console []byte
	// BootTime is host time from starting qemu to the guest command's start.
	BootTime time.Duration
	// Emulated is true when the guest ran under software emulation (TCG).
	Emulated bool
	// ResultsDir is the host side of the results share, or "" when Run
	// removed it (a temporary WorkDir without KeepWorkDir).
	ResultsDir string
}

// ResultsDir is the host directory of the results share for workDir.
func ResultsDir(workDir string) string { return filepath.Join(workDir, "results") }

// withDefaults validates c and fills in defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Kernel.Image == "" || c.Kernel.Modules == "" || c.Kernel.Version == "" {
		return c, fmt.Errorf("lab config: no kernel: use FromPath, Fetch or DefaultKernel")
	}
	switch {
	case c.MemoryMiB == 0:
		c.MemoryMiB = DefaultMemoryMiB
	case c.MemoryMiB < MinMemoryMiB || c.MemoryMiB > MaxMemoryMiB:
		return c, fmt.Errorf("lab config: memory %d MiB: use %d to %d MiB", c.MemoryMiB, MinMemoryMiB, MaxMemoryMiB)
	}
	switch {
	case c.CPUs == 0:
		c.CPUs = DefaultCPUs
	case c.CPUs < 0:
		return c, fmt.Errorf("lab config: %d CPUs: want at least 1", c.CPUs)
	}
	switch {
	case c.Timeout == 0:
		c.Timeout = DefaultTimeout
	case c.Timeout < 0:
		return c, fmt.Errorf("lab config: negative timeout %v", c.Timeout)
	}
	if c.CacheDir == "" {
		c.CacheDir = DefaultCacheDir()
	}
	switch c.Accel {
	case "":
		c.Accel = AccelAuto
	case AccelAuto, AccelKVM, AccelTCG:
	default:
		return c, fmt.Errorf("lab config: accelerator %q: want %q, %q or %q", c.Accel, AccelAuto, AccelKVM, AccelTCG)
	}
	return c, nil
}

// validate checks that g can be passed to the guest.
func (g Guest) validate() error {
	if len(g.Argv) == 0 || g.Argv[0] == "" {
		return fmt.Errorf("lab guest: empty command")
	}
	if strings.Contains(g.Argv[0], "=") {
		return fmt.Errorf("lab guest: command %q contains '=', which env would read as a variable", g.Argv[0])
	}
	for _, s := range append(append([]string{g.Dir}, g.Argv...), g.Env...) {
		if strings.ContainsRune(s, 0) {
			return fmt.Errorf("lab guest: %q contains a NUL byte", s)
		}
	}
	for _, e := range g.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("lab guest: environment entry %q is not KEY=VALUE", e)
		}
	}
	if g.Dir != "" && !filepath.IsAbs(g.Dir) {
		return fmt.Errorf("lab guest: working directory %q is not absolute", g.Dir)
	}
	return nil
}

// Run boots cfg.Kernel, runs g in the guest and returns its outcome. A
// non-zero exit of the command is not an error: it is in Outcome.ExitCode.
// Errors are returned for an invalid config, a missing qemu or busybox, a
// guest that never started or never finished the command (with the last
// console lines), a timeout and a cancelled ctx; in every case qemu is gone
// when Run returns.
func Run(ctx context.Context, cfg Config, g Guest) (out *Outcome, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := g.validate(); err != nil {
		return nil, err
	}
	if _, err := FromPath(cfg.Kernel.Image, cfg.Kernel.Modules); err != nil {
		return nil, err
	}
	qemu, err := findQemu()
	if err != nil {
		return nil, err
	}

	ws, err := newWorkspace(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cfg.KeepWorkDir {
			return
		}
		if rmErr := ws.remove(); rmErr != nil && err == nil {
			err = rmErr
		}
	}()
	nonce, err := newNonce()
	if err != nil {
		return nil, err
	}
	if err := ws.writeInitramfs(cfg.Kernel, stage2{Guest: g, Nonce: nonce}.script()); err != nil {
		return nil, err
	}

	boot := cfg.Kernel.Image
	switch p, err := pvhImage(ctx, execRunner{}, cfg.Kernel.Image, filepath.Join(cfg.CacheDir, "vmlinux")); {
	case err == nil:
		boot = p
	case !errors.Is(err, errNoPVH):
		return nil, err
	}
	spec := qemuSpec{
		Binary:    qemu,
		Kernel:    boot,
		Initramfs: ws.initramfs(),
		MemoryMiB: cfg.MemoryMiB,
		CPUs:      cfg.CPUs,
		Results:   ws.results(),
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	accel, err := chooseAccel(runCtx, cfg.Accel, spec, cfg.CacheDir)
	if err != nil {
		return nil, err
	}
	spec.Accel = accel
	if accel == AccelTCG {
		// The guest command learns it runs emulated, so that what it
		// records says so (tunbench marks such results "emulated").
		g.Env = append(g.Env, EnvEmulated+"=1")
		if err := ws.writeInitramfs(cfg.Kernel, stage2{Guest: g, Nonce: nonce}.script()); err != nil {
			return nil, err
		}
	}
	res, runErr := runQemu(runCtx, spec, startMarker(nonce), cfg.Console)

	out = &Outcome{
		Console:  res.console,
		BootTime: res.bootTime,
		Emulated: accel == AccelTCG,
	}
	if ws.keepsResults(cfg.KeepWorkDir) {
		out.ResultsDir = ws.results()
	}
	// A command that never ran left no output files: empty output, and the
	// missing exit file below says why.
	out.Stdout, _ = os.ReadFile(filepath.Join(ws.control(), stdoutFile))
	out.Stderr, _ = os.ReadFile(filepath.Join(ws.control(), stderrFile))
	exitText, exitErr := os.ReadFile(filepath.Join(ws.control(), exitFile))

	switch {
	case runErr != nil && ctx.Err() != nil:
		return out, fmt.Errorf("lab: guest %q: qemu killed: %w%s", g.Argv, ctx.Err(), failureDetail(out))
	case runErr != nil && runCtx.Err() != nil:
		return out, fmt.Errorf("lab: guest %q did not finish within %v: qemu killed%s", g.Argv, cfg.Timeout, failureDetail(out))
	case runErr != nil:
		return out, fmt.Errorf("lab: guest %q: %w%s", g.Argv, runErr, failureDetail(out))
	case exitErr != nil:
		return out, fmt.Errorf("lab: guest %q: the guest powered off without an exit status (the command never ran or the guest died)%s", g.Argv, failureDetail(out))
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(exitText)))
	if err != nil {
		return out, fmt.Errorf("lab: guest %q: bad exit status %q%s", g.Argv, exitText, failureDetail(out))
	}
	out.ExitCode = code
	return out, nil
}

// failureDetail is the tail of the console and of the command's output, for
// an error message.
func failureDetail(o *Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n--- last console lines ---\n%s", tailLines(o.Console, consoleTailLines))
	if len(o.Stdout) > 0 {
		fmt.Fprintf(&b, "\n--- guest stdout (tail) ---\n%s", tailLines(o.Stdout, consoleTailLines))
	}
	if len(o.Stderr) > 0 {
		fmt.Fprintf(&b, "\n--- guest stderr (tail) ---\n%s", tailLines(o.Stderr, consoleTailLines))
	}
	return b.String()
}

// consoleTailLines is how many console lines an error carries.
const consoleTailLines = 50

// tailLines returns the last n lines of b.
func tailLines(b []byte, n int) string {
	s := strings.TrimRight(string(b), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func newNonce() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lab: nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
