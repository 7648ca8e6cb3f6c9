// Package lab boots a stock Debian kernel in qemu to run commands that need
// kernel features the host lacks (Geneve, GRE, IPIP, ip6 tunnels, WireGuard,
// ESP, the Open vSwitch datapath).
//
// The guest's root file system is the host's own root, exported read-only
// over 9p with a tmpfs overlay on top, so every binary installed on the host
// is there in the guest, next to the guest kernel's modules (bind-mounted on
// /lib/modules/<version>). The guest has no network device to the outside:
// the only channels are the serial console and two 9p shares.
//
// Contract:
//
//   - A Kernel is validated before use: the image must be a bzImage and the
//     modules directory must belong to the same kernel version. FromPath
//     validates given paths; Fetch downloads a Debian kernel package with
//     apt-get into a cache and never installs it on the host.
//   - Run boots one guest, runs one command in it as root and powers it off.
//     The command's exit code, stdout and stderr travel back over the
//     writable results share (GuestResultsDir in the guest), never over the
//     serial console, which carries only kernel and boot messages (returned
//     separately as Outcome.Console).
//   - A guest that outlives Config.Timeout, or whose context is cancelled, is
//     killed together with its process group; the error then carries the
//     last console lines. Run leaves no qemu process behind and removes the
//     files it created unless Config.KeepWorkDir is set.
//   - Under software emulation (no usable KVM) Outcome.Emulated is true:
//     such a guest proves function, never performance.
//
// Acceleration: Config.Accel "auto" uses KVM only when it proves to run
// guests, first with KVM_CREATE_VM/KVM_RUN on a one-instruction (hlt) guest,
// then with a real boot of the lab kernel under KVM to a probe program in
// the initramfs, because on nested hosts /dev/kvm opens and runs the hlt
// guest but qemu dies (here: "failed to set MSR 0x10a"). Otherwise it uses
// software emulation, -accel tcg,thread=multi -cpu max. The answer is kept
// per process and, in the cache directory (file kvm-probe), for the rest
// of the host's boot, for this qemu and kernel: where KVM fails the boot
// probe can spin a core until its 30 s timeout, and every guest-booting
// process would pay that again.
//
// Boot speed: qemu boots the kernel's uncompressed vmlinux through its PVH
// entry point when it can be extracted (see pvh.go), which halves the boot
// under emulation; otherwise the bzImage.
//
// Host requirements: qemu-system-x86 (qemu-system-x86_64), busybox-static
// (/bin/busybox, statically linked), kmod (depmod, and modprobe inside the
// guest) and, for Fetch, apt-get and dpkg with current package lists;
// xz-utils (Debian 6.1 kernels) and zstd (6.12) for the fast PVH boot.
// Available reports what is missing.
//
// Nothing in this package is safe to share between goroutines except where
// a function says so; Run may be called concurrently, but each guest takes
// one to two cores.
package lab
