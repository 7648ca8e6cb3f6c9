package lab

import (
	"fmt"
	"strings"
)

// GuestResultsDir is where the guest sees the writable results share; on
// the host it is Outcome.ResultsDir (ResultsDir(workDir) before Run).
const GuestResultsDir = "/tunbench-results"

// EnvInLab is set to "1" in the environment of every guest command.
const EnvInLab = "TUNBENCH_IN_LAB"

// EnvEmulated is set to "1" in the environment of a guest command that runs
// under software emulation (TCG): its figures measure function, not
// performance.
const EnvEmulated = "TUNBENCH_EMULATED"

// Layout shared by the scripts and the host side.
const (
	controlDir    = ".tunbench-lab"            // inside the results share: the lab's own files
	stage2Path    = "/run/tunbench-lab/stage2" // in the new root
	initModDir    = "/lib/modules"             // in the initramfs: flat, decompressed .ko files
	markerPrefix  = "tunbench-lab: "           // console lines written by the scripts
	guestBasePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	ninePOptions  = "trans=virtio,version=9p2000.L,msize=262144"
)

// Files in the control directory.
const (
	stdoutFile = "stdout"
	stderrFile = "stderr"
	exitFile   = "exit"
)

// baseGuestEnv is the environment a guest command starts from; Guest.Env is
// applied after it and wins.
var baseGuestEnv = []string{
	"PATH=" + guestBasePath,
	"HOME=/root",
	"USER=root",
	"LOGNAME=root",
	"TERM=dumb",
	EnvInLab + "=1",
}

// stage1 describes the initramfs's /init script.
type stage1 struct {
	// KernelVersion is the guest's uname -r.
	KernelVersion string
	// ModulesDir is the host path of the guest kernel's modules, which the
	// guest sees at the same path through the 9p root.
	ModulesDir string
	// Modules are module names, in load order, found in the initramfs as
	// initModDir/<name>.ko.
	Modules []string
}

// script renders /init. It runs as PID 1 under busybox sh, mounts the host
// root read-only over 9p with a tmpfs overlay, mounts the results share,
// and switch_roots into stage 2. Any failure prints a marker line and
// powers the guest off.
func (s stage1) script() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!/bin/sh")
	w("# tunbench lab stage 1: host root over 9p + tmpfs overlay, then stage 2.")
	w("export PATH=/bin")
	w("fail() {")
	w("\techo %s\"stage 1 failed: $*\"", markerPrefix)
	w("\techo o >/proc/sysrq-trigger")
	w("\tsleep 5")
	w("\tpoweroff -f")
	w("}")
	w("mount -t proc proc /proc || fail mount /proc")
	w("mount -t sysfs sysfs /sys || fail mount /sys")
	w("mount -t devtmpfs devtmpfs /dev || fail mount /dev")
	for _, m := range s.Modules {
		w("insmod %s/%s.ko || fail insmod %s", initModDir, m, m)
	}
	w("mount -t 9p -o %s,ro hostroot /lower || fail mount host root over 9p", ninePOptions)
	w("mount -t tmpfs -o mode=0755 tmpfs /upper || fail mount overlay tmpfs")
	w("mkdir /upper/rw /upper/work || fail mkdir overlay dirs")
	w("mount -t overlay -o lowerdir=/lower,upperdir=/upper/rw,workdir=/upper/work overlay /newroot || fail mount overlay")
	mods := "/lib/modules/" + s.KernelVersion
	w("mkdir -p /newroot%s || fail mkdir %s", mods, mods)
	w("mount --bind %s %s || fail bind kernel modules", shellQuote("/newroot"+s.ModulesDir), "/newroot"+mods)
	w("mount --move /proc /newroot/proc || fail move /proc")
	w("mount --move /sys /newroot/sys || fail move /sys")
	w("mount --move /dev /newroot/dev || fail move /dev")
	// The static node a Debian boot creates for tun (systemd-tmpfiles,
	// from kmod static-nodes): devtmpfs shows /dev/net/tun only once the
	// module is loaded, and the TUN daemons (wireguard-go, boringtun,
	// openvpn ...) open the node rather than load the module. With it,
	// their first open loads tun as on a stock host.
	w("mkdir -p /newroot/dev/net || fail mkdir /dev/net")
	w("[ -e /newroot/dev/net/tun ] || mknod -m 0666 /newroot/dev/net/tun c 10 200 || fail mknod /dev/net/tun")
	w("mkdir -p /newroot/dev/pts /newroot/dev/shm || fail mkdir /dev/pts /dev/shm")
	w("mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts /newroot/dev/pts || fail mount /dev/pts")
	w("mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm || fail mount /dev/shm")
	w("mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup || fail mount /sys/fs/cgroup")
	w("mount -t bpf bpf /newroot/sys/fs/bpf || fail mount /sys/fs/bpf")
	w("mount -t tmpfs -o mode=0755 tmpfs /newroot/run || fail mount /run")
	// /tmp stays part of the overlay: the host's /tmp shows through (a
	// checkout or test binary there is visible in the guest) and writes
	// stay in the guest's tmpfs.
	w("mkdir -p /newroot%s || fail mkdir %s", GuestResultsDir, GuestResultsDir)
	w("mount -t 9p -o %s results /newroot%s || fail mount results share", ninePOptions, GuestResultsDir)
	w("mkdir -p /newroot%s || fail mkdir stage 2 dir", parentDir(stage2Path))
	w("cp /stage2 /newroot%s || fail copy stage 2", stage2Path)
	w("ip link set lo up || fail lo up")
	w("hostname tunbench-lab || fail hostname")
	w("exec switch_root /newroot /bin/sh %s", stage2Path)
	w("fail switch_root")
	return b.String()
}

// stage2 describes the script that runs the guest command in the new root.
type stage2 struct {
	Guest Guest
	// Nonce makes the start marker unique to this boot, so nothing else
	// printed on the console can fake it.
	Nonce string
}

// startMarker is the console line stage 2 prints just before the command.
func startMarker(nonce string) string { return markerPrefix + "start " + nonce }

// script renders stage 2. It runs as PID 1 under the host's /bin/sh: it
// enters the working directory, prints the start marker, runs the command
// with stdin from /dev/null and stdout and stderr in files on the results
// share, records the exit code there, and powers off.
func (s stage2) script() string {
	ctl := GuestResultsDir + "/" + controlDir
	dir := s.Guest.Dir
	if dir == "" {
		dir = "/"
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!/bin/sh")
	w("# tunbench lab stage 2: run the guest command, record its outcome, power off.")
	w("off() {")
	w("\tsync")
	w("\techo o >/proc/sysrq-trigger")
	w("\tsleep 10")
	w("}")
	w("cd %s || { echo %s; off; }", shellQuote(dir), shellQuote(markerPrefix+"stage 2 failed: cd "+dir))
	w("echo %s", shellQuote(startMarker(s.Nonce)))
	// "--" ends env's options, so nothing below is read as one.
	args := []string{"env", "-i", "--"}
	for _, e := range append(append([]string{}, baseGuestEnv...), s.Guest.Env...) {
		args = append(args, shellQuote(e))
	}
	for _, a := range s.Guest.Argv {
		args = append(args, shellQuote(a))
	}
	w("%s </dev/null >%s/%s 2>%s/%s", strings.Join(args, " "), ctl, stdoutFile, ctl, stderrFile)
	w("echo $? >%s/%s", ctl, exitFile)
	w("echo %s", shellQuote(markerPrefix+"done"))
	w("off")
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func parentDir(p string) string {
	return p[:strings.LastIndex(p, "/")]
}
