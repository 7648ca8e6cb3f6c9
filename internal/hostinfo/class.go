package hostinfo

import (
	"fmt"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// ClassInput is what DecideClass decides a host's class from. ReadClass
// reads it from the running machine; tests fill it from captured files.
type ClassInput struct {
	// CPUID is true when the processor's CPUID instruction was read (x86).
	// Then HypervisorBit is CPUID leaf 1 ECX bit 31, which every mainstream
	// hypervisor sets, and HypervisorVendor is the 12-byte signature of
	// leaf 0x40000000 ("KVMKVMKVM", "TCGTCGTCGTCG", "Microsoft Hv"), with
	// NULs and spaces trimmed; "" when there is none.
	CPUID            bool
	HypervisorBit    bool
	HypervisorVendor string
	// CPUModel is /proc/cpuinfo's "model name"; CPUFlagHypervisor is true
	// when its flags include "hypervisor" (the kernel's view of the bit).
	CPUModel          string
	CPUFlagHypervisor bool
	// SysHypervisor is /sys/hypervisor/type ("xen"); "" when absent.
	SysHypervisor string
	// DMIVendor and DMIProduct are /sys/class/dmi/id/sys_vendor and
	// product_name; "" on machines without DMI (Firecracker, most arm64).
	DMIVendor, DMIProduct string
	// ACPIOEM is the OEM ID in the header of the ACPI FADT
	// (/sys/firmware/acpi/tables/FACP), trimmed; "" when unreadable. VMMs
	// that build their own ACPI tables sign them: Firecracker "FIRECK",
	// Cloud Hypervisor "CLOUDH", QEMU "BOCHS".
	ACPIOEM string
}

// HostClass is DecideClass's answer: result.Host's Class, Hypervisor and
// ClassEvidence.
type HostClass struct {
	Class      string
	Hypervisor string
	Evidence   string
}

// hypervisorSignatures maps CPUID leaf 0x40000000 signatures (trimmed) to
// hypervisor names. QEMU's TCG signature is not here: it means emulation.
var hypervisorSignatures = map[string]string{
	"KVMKVMKVM":    "KVM",
	"Linux KVM Hv": "KVM", // KVM's Hyper-V emulation on Linux guests
	"Microsoft Hv": "Hyper-V",
	"VMwareVMware": "VMware",
	"XenVMMXenVMM": "Xen",
	"VBoxVBoxVBox": "VirtualBox",
	"bhyve bhyve":  "bhyve",
	"prl hyperv":   "Parallels",
	"ACRNACRNACRN": "ACRN",
	"QNXQVMBSQG":   "QNX",
	"VirtualApple": "Apple Virtualization",
}

// tcgSignature is what QEMU answers at leaf 0x40000000 under TCG.
const tcgSignature = "TCGTCGTCGTCG"

// acpiVMMs maps the ACPI OEM IDs of VMMs that write their own tables.
var acpiVMMs = map[string]string{
	"FIRECK": "Firecracker",      // firecracker src/vmm/src/acpi
	"CLOUDH": "Cloud Hypervisor", // cloud-hypervisor vmm/src/acpi.rs
	"BOCHS":  "QEMU",             // qemu include/hw/acpi/aml-build.h
}

// dmiVendors are DMI product_name or sys_vendor prefixes of virtual
// machines, after systemd-detect-virt's table; product_name is tried first
// (it says "KVM" where sys_vendor says "QEMU").
var dmiVendors = []struct{ prefix, hypervisor string }{
	{"KVM", "KVM"},
	{"Amazon EC2", "Amazon EC2"},
	{"Google Compute Engine", "Google Compute Engine"},
	{"QEMU", "QEMU"},
	{"VMware", "VMware"},
	{"VMW", "VMware"},
	{"innotek GmbH", "VirtualBox"},
	{"Oracle Corporation", "VirtualBox"},
	{"VirtualBox", "VirtualBox"},
	{"Xen", "Xen"},
	{"Bochs", "Bochs"},
	{"Parallels", "Parallels"},
	{"BHYVE", "bhyve"},
}

// dmiHypervisor names the hypervisor DMI points at, or "".
func dmiHypervisor(vendor, product string) string {
	if vendor == "Microsoft Corporation" && product == "Virtual Machine" {
		return "Hyper-V"
	}
	// EC2's bare-metal instances (*.metal) carry the same vendor.
	if vendor == "Amazon EC2" && strings.HasSuffix(product, ".metal") {
		return ""
	}
	for _, s := range []string{product, vendor} {
		for _, d := range dmiVendors {
			if s != "" && strings.HasPrefix(s, d.prefix) {
				return d.hypervisor
			}
		}
	}
	return ""
}

// DecideClass decides what kind of machine the input describes:
//
//   - emulated (QEMU TCG): CPUID leaf 0x40000000 says "TCGTCGTCGTCG", or
//     the CPU model is QEMU's "QEMU TCG CPU", or QEMU's generic "QEMU
//     Virtual CPU" (or QEMU's DMI/ACPI) shows with no KVM signature;
//   - vm: a known hypervisor signature at leaf 0x40000000 (refined by
//     /sys/hypervisor/type for Xen and by the ACPI OEM ID for VMMs on
//     KVM such as Firecracker), else the hypervisor bit, a DMI vendor or
//     an ACPI OEM ID of a hypervisor;
//   - bare-metal: CPUID was read and none of the above; or, without CPUID
//     (arm64), DMI names a vendor that is no hypervisor's;
//   - unknown: nothing to decide from.
func DecideClass(in ClassInput) HostClass {
	sig := in.HypervisorVendor
	var ev []string
	if sig != "" {
		ev = append(ev, fmt.Sprintf("CPUID leaf 0x40000000 %q", sig))
	} else if in.HypervisorBit {
		ev = append(ev, "CPUID hypervisor bit")
	}
	if in.CPUFlagHypervisor && !in.HypervisorBit {
		ev = append(ev, "cpuinfo flag hypervisor")
	}
	emulated := func(why ...string) HostClass {
		return HostClass{result.ClassEmulated, "QEMU TCG", strings.Join(append(ev, why...), "; ")}
	}
	vm := func(hv string, why ...string) HostClass {
		return HostClass{result.ClassVM, hv, strings.Join(append(ev, why...), "; ")}
	}
	model := fmt.Sprintf("CPU model %q", in.CPUModel)
	switch {
	case sig == tcgSignature:
		return emulated()
	case strings.HasPrefix(in.CPUModel, "QEMU TCG CPU"):
		return emulated(model)
	}

	dmi := dmiHypervisor(in.DMIVendor, in.DMIProduct)
	dmiEv := fmt.Sprintf("DMI %q %q", in.DMIVendor, in.DMIProduct)
	acpi := acpiVMMs[in.ACPIOEM]
	acpiEv := fmt.Sprintf("ACPI OEM ID %q", in.ACPIOEM)
	xen := in.SysHypervisor == "xen"

	if hv, ok := hypervisorSignatures[sig]; ok {
		switch {
		case xen && hv != "Xen": // Xen's Viridian interface answers as Hyper-V
			return vm("Xen", "/sys/hypervisor/type xen")
		case hv == "Hyper-V" && dmi == "QEMU": // KVM with Hyper-V enlightenments
			return vm("KVM", dmiEv)
		case hv == "KVM" && acpi != "" && acpi != "QEMU": // a VMM on KVM
			return vm(acpi, acpiEv)
		}
		return vm(hv)
	}
	if sig != "" {
		return vm(fmt.Sprintf("unknown (%q)", sig))
	}
	// No signature. KVM always gives one (unless hidden, kvm=off), so
	// QEMU without it is QEMU emulating the CPU in software.
	switch {
	case strings.HasPrefix(in.CPUModel, "QEMU Virtual CPU"):
		return emulated(model + " without a KVM signature")
	case in.CPUID && in.HypervisorBit && dmi == "QEMU":
		return emulated(dmiEv + " without a KVM signature")
	case in.CPUID && in.HypervisorBit && acpi == "QEMU":
		return emulated(acpiEv + " without a KVM signature")
	case xen:
		return vm("Xen", "/sys/hypervisor/type xen")
	case dmi != "":
		return vm(dmi, dmiEv)
	case acpi != "":
		return vm(acpi, acpiEv)
	case in.HypervisorBit || in.CPUFlagHypervisor:
		return vm("unknown")
	case in.CPUID:
		return HostClass{Class: result.ClassBareMetal, Evidence: "CPUID hypervisor bit clear, no hypervisor in DMI or ACPI"}
	case in.DMIVendor != "":
		return HostClass{Class: result.ClassBareMetal, Evidence: dmiEv + " names no hypervisor"}
	}
	return HostClass{Class: result.ClassUnknown, Evidence: "no CPUID, DMI or hypervisor information"}
}
