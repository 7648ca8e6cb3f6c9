package lab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// KVM ioctls and exit reasons (linux/kvm.h, x86_64).
const (
	kvmAPIVersion        = 12
	kvmGetAPIVersion     = 0xAE00
	kvmCreateVM          = 0xAE01
	kvmGetVCPUMmapSize   = 0xAE04
	kvmCreateVCPU        = 0xAE41
	kvmSetUserMemRegion  = 0x4020AE46
	kvmRun               = 0xAE80
	kvmSetRegs           = 0x4090AE82
	kvmGetSregs          = 0x8138AE83
	kvmSetSregs          = 0x4138AE84
	kvmExitHLT           = 5
	kvmRunExitReasonOff  = 8   // offset of exit_reason in struct kvm_run
	kvmRegsSize          = 144 // struct kvm_regs
	kvmSregsSize         = 312 // struct kvm_sregs
	kvmProbeGuestAddress = 0x1000
)

var (
	kvmOnce sync.Once
	kvmErr  error
)

// kvmUsable reports whether KVM runs guests on this host; nil means yes.
// The answer is computed once per process and is safe for concurrent use.
//
// Opening /dev/kvm is not enough: on some hosts (nested virtualisation) it
// opens but guests die with "KVM internal error". So the probe runs a real
// guest: a VM with one vCPU in real mode whose only instruction is hlt,
// which must come back as KVM_EXIT_HLT. This costs milliseconds, far less
// than booting qemu to find out.
func kvmUsable() error {
	kvmOnce.Do(func() { kvmErr = probeKVM() })
	return kvmErr
}

func probeKVM() (err error) {
	kvm, err := unix.Open("/dev/kvm", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("kvm probe: open /dev/kvm: %w", err)
	}
	defer unix.Close(kvm)
	if v, err := ioctl(kvm, kvmGetAPIVersion, 0); err != nil || v != kvmAPIVersion {
		return fmt.Errorf("kvm probe: KVM_GET_API_VERSION = %d, want %d: %v", v, kvmAPIVersion, err)
	}
	vm, err := ioctl(kvm, kvmCreateVM, 0)
	if err != nil {
		return fmt.Errorf("kvm probe: KVM_CREATE_VM: %w", err)
	}
	defer unix.Close(int(vm))

	mem, err := unix.Mmap(-1, 0, 0x1000, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("kvm probe: mmap guest memory: %w", err)
	}
	defer unix.Munmap(mem)
	mem[0] = 0xf4                                                                        // hlt
	var region [32]byte                                                                  // struct kvm_userspace_memory_region
	binary.LittleEndian.PutUint32(region[0:], 0)                                         // slot
	binary.LittleEndian.PutUint32(region[4:], 0)                                         // flags
	binary.LittleEndian.PutUint64(region[8:], kvmProbeGuestAddress)                      // guest_phys_addr
	binary.LittleEndian.PutUint64(region[16:], uint64(len(mem)))                         // memory_size
	binary.LittleEndian.PutUint64(region[24:], uint64(uintptr(unsafe.Pointer(&mem[0])))) // userspace_addr
	if _, err := ioctlPtr(int(vm), kvmSetUserMemRegion, unsafe.Pointer(&region)); err != nil {
		return fmt.Errorf("kvm probe: KVM_SET_USER_MEMORY_REGION: %w", err)
	}

	vcpu, err := ioctl(int(vm), kvmCreateVCPU, 0)
	if err != nil {
		return fmt.Errorf("kvm probe: KVM_CREATE_VCPU: %w", err)
	}
	defer unix.Close(int(vcpu))
	size, err := ioctl(kvm, kvmGetVCPUMmapSize, 0)
	if err != nil {
		return fmt.Errorf("kvm probe: KVM_GET_VCPU_MMAP_SIZE: %w", err)
	}
	run, err := unix.Mmap(int(vcpu), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("kvm probe: mmap kvm_run: %w", err)
	}
	defer unix.Munmap(run)

	var sregs [kvmSregsSize]byte
	if _, err := ioctlPtr(int(vcpu), kvmGetSregs, unsafe.Pointer(&sregs)); err != nil {
		return fmt.Errorf("kvm probe: KVM_GET_SREGS: %w", err)
	}
	// cs is the first struct kvm_segment: base u64, limit u32, selector u16.
	binary.LittleEndian.PutUint64(sregs[0:], 0)
	binary.LittleEndian.PutUint16(sregs[12:], 0)
	if _, err := ioctlPtr(int(vcpu), kvmSetSregs, unsafe.Pointer(&sregs)); err != nil {
		return fmt.Errorf("kvm probe: KVM_SET_SREGS: %w", err)
	}
	var regs [kvmRegsSize]byte
	binary.LittleEndian.PutUint64(regs[16*8:], kvmProbeGuestAddress) // rip
	binary.LittleEndian.PutUint64(regs[17*8:], 0x2)                  // rflags: reserved bit 1
	if _, err := ioctlPtr(int(vcpu), kvmSetRegs, unsafe.Pointer(&regs)); err != nil {
		return fmt.Errorf("kvm probe: KVM_SET_REGS: %w", err)
	}
	if _, err := ioctl(int(vcpu), kvmRun, 0); err != nil {
		return fmt.Errorf("kvm probe: KVM_RUN: %w", err)
	}
	if reason := binary.LittleEndian.Uint32(run[kvmRunExitReasonOff:]); reason != kvmExitHLT {
		return fmt.Errorf("kvm probe: a guest executing hlt exited with reason %d, want %d (KVM_EXIT_HLT): %w", reason, kvmExitHLT, errKVMBroken)
	}
	return nil
}

// errKVMBroken marks a KVM that opens but does not run guests correctly.
var errKVMBroken = errors.New("kvm does not run guests on this host")

func ioctl(fd int, req, arg uintptr) (uintptr, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
	if errno != 0 {
		return r, errno
	}
	return r, nil
}

func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) (uintptr, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if errno != 0 {
		return r, errno
	}
	return r, nil
}
