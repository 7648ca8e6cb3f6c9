package lab

import (
	"context"
	"time"
)

// Internals for the external tests, which need a real kernel from labtest.

// BootModuleOrder is the load order of the initramfs's modules.
func BootModuleOrder(modulesDir string) ([]string, error) {
	idx, err := loadModuleIndex(modulesDir)
	if err != nil {
		return nil, err
	}
	return idx.loadOrder(bootModules)
}

// PVHImage extracts the PVH-bootable vmlinux of a bzImage into cacheDir.
func PVHImage(ctx context.Context, image, cacheDir string) (string, error) {
	return pvhImage(ctx, execRunner{}, image, cacheDir)
}

// CheckPVH is checkPVH.
var CheckPVH = checkPVH

// ProbeBoot boots kernel k into the initramfs's probe program under accel,
// allowing it timeout: a KVM probe gets probeTimeout, but the same guest
// under TCG on a loaded 2-core host can take longer than that to boot.
func ProbeBoot(ctx context.Context, k Kernel, accel, workDir string, timeout time.Duration) (bool, error) {
	ws, err := newWorkspace(workDir)
	if err != nil {
		return false, err
	}
	defer ws.remove()
	if err := ws.writeInitramfs(k, "#!/bin/sh\n"); err != nil {
		return false, err
	}
	qemu, err := findQemu()
	if err != nil {
		return false, err
	}
	return probeBoot(ctx, qemuSpec{Binary: qemu, Accel: accel, Kernel: k.Image, Initramfs: ws.initramfs(), MemoryMiB: DefaultMemoryMiB, CPUs: 1, Results: ws.results()}, timeout)
}
