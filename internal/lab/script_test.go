package lab

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func TestStage1Script(t *testing.T) {
	s := stage1{
		KernelVersion: "6.1.0-56-amd64",
		ModulesDir:    "/root/.cache/tunbench/linux-image-6.1.0-56-amd64/lib/modules/6.1.0-56-amd64",
		Modules:       []string{"virtio", "virtio_ring", "9pnet", "overlay"},
	}
	want := []string{
		"#!/bin/sh",
		"# tunbench lab stage 1: host root over 9p + tmpfs overlay, then stage 2.",
		"export PATH=/bin",
		"fail() {",
		`	echo tunbench-lab: "stage 1 failed: $*"`,
		"	echo o >/proc/sysrq-trigger",
		"	sleep 5",
		"	poweroff -f",
		"}",
		"mount -t proc proc /proc || fail mount /proc",
		"mount -t sysfs sysfs /sys || fail mount /sys",
		"mount -t devtmpfs devtmpfs /dev || fail mount /dev",
		"insmod /lib/modules/virtio.ko || fail insmod virtio",
		"insmod /lib/modules/virtio_ring.ko || fail insmod virtio_ring",
		"insmod /lib/modules/9pnet.ko || fail insmod 9pnet",
		"insmod /lib/modules/overlay.ko || fail insmod overlay",
		"mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot /lower || fail mount host root over 9p",
		"mount -t tmpfs -o mode=0755 tmpfs /upper || fail mount overlay tmpfs",
		"mkdir /upper/rw /upper/work || fail mkdir overlay dirs",
		"mount -t overlay -o lowerdir=/lower,upperdir=/upper/rw,workdir=/upper/work overlay /newroot || fail mount overlay",
		"mkdir -p /newroot/lib/modules/6.1.0-56-amd64 || fail mkdir /lib/modules/6.1.0-56-amd64",
		"mount --bind /newroot/root/.cache/tunbench/linux-image-6.1.0-56-amd64/lib/modules/6.1.0-56-amd64 /newroot/lib/modules/6.1.0-56-amd64 || fail bind kernel modules",
		"mount --move /proc /newroot/proc || fail move /proc",
		"mount --move /sys /newroot/sys || fail move /sys",
		"mount --move /dev /newroot/dev || fail move /dev",
		"mkdir -p /newroot/dev/net || fail mkdir /dev/net",
		"[ -e /newroot/dev/net/tun ] || mknod -m 0666 /newroot/dev/net/tun c 10 200 || fail mknod /dev/net/tun",
		"mkdir -p /newroot/dev/pts /newroot/dev/shm || fail mkdir /dev/pts /dev/shm",
		"mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts /newroot/dev/pts || fail mount /dev/pts",
		"mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm || fail mount /dev/shm",
		"mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup || fail mount /sys/fs/cgroup",
		"mount -t bpf bpf /newroot/sys/fs/bpf || fail mount /sys/fs/bpf",
		"mount -t tmpfs -o mode=0755 tmpfs /newroot/run || fail mount /run",
		"mkdir -p /newroot/tunbench-results || fail mkdir /tunbench-results",
		"mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results /newroot/tunbench-results || fail mount results share",
		"mkdir -p /newroot/run/tunbench-lab || fail mkdir stage 2 dir",
		"cp /stage2 /newroot/run/tunbench-lab/stage2 || fail copy stage 2",
		"ip link set lo up || fail lo up",
		"hostname tunbench-lab || fail hostname",
		"exec switch_root /newroot /bin/sh /run/tunbench-lab/stage2",
		"fail switch_root",
	}
	if d := cmp.Diff(want, lines(s.script())); d != "" {
		t.Errorf("stage 1 (-want +got):\n%s", d)
	}
}

func TestStage2Script(t *testing.T) {
	s := stage2{
		Guest: Guest{
			Argv: []string{"/tunbench-results/lab.test", "-test.run", "^TestKernel$", "it's"},
			Env:  []string{"A=b c"},
			Dir:  "/work/main/internal/method",
		},
		Nonce: "0123456789abcdef",
	}
	want := []string{
		"#!/bin/sh",
		"# tunbench lab stage 2: run the guest command, record its outcome, power off.",
		"off() {",
		"	sync",
		"	echo o >/proc/sysrq-trigger",
		"	sleep 10",
		"}",
		"cd /work/main/internal/method || { echo 'tunbench-lab: stage 2 failed: cd /work/main/internal/method'; off; }",
		"echo 'tunbench-lab: start 0123456789abcdef'",
		"env -i -- PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root USER=root LOGNAME=root TERM=dumb TUNBENCH_IN_LAB=1 'A=b c' " +
			`/tunbench-results/lab.test -test.run '^TestKernel$' 'it'\''s' </dev/null >/tunbench-results/.tunbench-lab/stdout 2>/tunbench-results/.tunbench-lab/stderr`,
		"echo $? >/tunbench-results/.tunbench-lab/exit",
		"echo 'tunbench-lab: done'",
		"off",
	}
	if d := cmp.Diff(want, lines(s.script())); d != "" {
		t.Errorf("stage 2 (-want +got):\n%s", d)
	}
	bare := stage2{Guest: Guest{Argv: []string{"true"}}}
	if got := bare.script(); !strings.Contains(got, "cd / ||") {
		t.Errorf("stage 2 without Dir does not cd to /:\n%s", got)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":            "''",
		"plain-1.2/x": "plain-1.2/x",
		"a b":         "'a b'",
		"it's":        `'it'\''s'`,
		"$HOME":       "'$HOME'",
		"a\nb":        "'a\nb'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
