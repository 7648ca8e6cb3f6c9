package hostinfo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/lab/labtest"
	"github.com/tunbench/tunbench/internal/result"
)

// testdata/class/<case> holds inputs captured on real machines (see
// captureClassInputs): the files readClassInput reads, under the same
// paths, and a "cpuid" file with what ReadCPUID returned.
//
//	firecracker-kvm: the development machine, a Firecracker microVM on KVM
//	    (no DMI; ACPI tables signed FIRECK).
//	lab-qemu-tcg: the kernel lab's guest (qemu-system-x86_64 -accel tcg
//	    -cpu max), Debian's 6.1 kernel.
func TestDecideClassCaptured(t *testing.T) {
	for _, tc := range []struct {
		dir             string
		class, hv       string
		evidence        string // a part of the evidence
		model, osRel    string
		cpuid, flagBit  bool
		acpiOEM, vendor string
	}{
		{dir: "firecracker-kvm", class: result.ClassVM, hv: "Firecracker", evidence: `ACPI OEM ID "FIRECK"`,
			model: "AMD EPYC", osRel: "Debian GNU/Linux 12 (bookworm)", cpuid: true, flagBit: true,
			acpiOEM: "FIRECK", vendor: "KVMKVMKVM"},
		{dir: "lab-qemu-tcg", class: result.ClassEmulated, hv: "QEMU TCG", evidence: `"TCGTCGTCGTCG"`,
			model: "QEMU TCG CPU version 2.5+", osRel: "Debian GNU/Linux 12 (bookworm)", cpuid: true, flagBit: true,
			acpiOEM: "BOCHS", vendor: "TCGTCGTCGTCG"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			root := filepath.Join("testdata", "class", tc.dir)
			in := readClassInput(root, readCapturedCPUID(t, root))
			if in.CPUModel != tc.model || in.CPUID != tc.cpuid || in.CPUFlagHypervisor != tc.flagBit ||
				in.ACPIOEM != tc.acpiOEM || in.HypervisorVendor != tc.vendor {
				t.Errorf("input %+v; want model %q, cpuid %v, flag %v, ACPI OEM %q, signature %q",
					in, tc.model, tc.cpuid, tc.flagBit, tc.acpiOEM, tc.vendor)
			}
			got := DecideClass(in)
			if got.Class != tc.class || got.Hypervisor != tc.hv || !strings.Contains(got.Evidence, tc.evidence) {
				t.Errorf("DecideClass = %+v; want %s (%s), evidence with %s", got, tc.class, tc.hv, tc.evidence)
			}
			if rel := readOSRelease(root); rel != tc.osRel {
				t.Errorf("os release %q, want %q", rel, tc.osRel)
			}
		})
	}
}

// The other hypervisors, from their documented signatures (CPUID leaf
// 0x40000000, DMI strings, ACPI OEM IDs), not captured.
func TestDecideClass(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        ClassInput
		class, hv string
	}{
		{"bare metal x86", ClassInput{CPUID: true, CPUModel: "AMD EPYC 7443P 24-Core Processor",
			DMIVendor: "Supermicro", DMIProduct: "AS -1114S-WN10RT"}, result.ClassBareMetal, ""},
		{"bare metal x86 without DMI", ClassInput{CPUID: true, CPUModel: "Intel(R) Xeon(R) Gold 6338"}, result.ClassBareMetal, ""},
		{"qemu/kvm", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "KVMKVMKVM", CPUFlagHypervisor: true,
			CPUModel: "AMD EPYC 7763 64-Core Processor", DMIVendor: "QEMU", DMIProduct: "Standard PC (Q35 + ICH9, 2009)",
			ACPIOEM: "BOCHS"}, result.ClassVM, "KVM"},
		{"qemu/kvm with qemu64 cpu", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "KVMKVMKVM",
			CPUModel: "QEMU Virtual CPU version 2.5+", DMIVendor: "QEMU"}, result.ClassVM, "KVM"},
		{"qemu/kvm with hyper-v enlightenments", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "Microsoft Hv",
			DMIVendor: "QEMU", DMIProduct: "Standard PC (i440FX + PIIX, 1996)"}, result.ClassVM, "KVM"},
		{"cloud hypervisor", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "KVMKVMKVM",
			ACPIOEM: "CLOUDH"}, result.ClassVM, "Cloud Hypervisor"},
		{"ec2 nitro", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "KVMKVMKVM",
			DMIVendor: "Amazon EC2", DMIProduct: "c6i.large"}, result.ClassVM, "KVM"},
		{"ec2 graviton vm (arm64)", ClassInput{DMIVendor: "Amazon EC2", DMIProduct: "c7g.large"}, result.ClassVM, "Amazon EC2"},
		{"ec2 graviton metal (arm64)", ClassInput{DMIVendor: "Amazon EC2", DMIProduct: "c7g.metal"}, result.ClassBareMetal, ""},
		{"hyper-v", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "Microsoft Hv",
			DMIVendor: "Microsoft Corporation", DMIProduct: "Virtual Machine"}, result.ClassVM, "Hyper-V"},
		{"xen hvm", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "XenVMMXenVMM",
			SysHypervisor: "xen", DMIVendor: "Xen", DMIProduct: "HVM domU"}, result.ClassVM, "Xen"},
		{"xen with viridian", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "Microsoft Hv",
			SysHypervisor: "xen"}, result.ClassVM, "Xen"},
		{"xen pv", ClassInput{CPUID: true, SysHypervisor: "xen"}, result.ClassVM, "Xen"},
		{"vmware", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "VMwareVMware",
			DMIVendor: "VMware, Inc.", DMIProduct: "VMware7,1"}, result.ClassVM, "VMware"},
		{"virtualbox without the bit", ClassInput{CPUID: true, DMIVendor: "innotek GmbH", DMIProduct: "VirtualBox"},
			result.ClassVM, "VirtualBox"},
		{"gce", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "KVMKVMKVM",
			DMIVendor: "Google", DMIProduct: "Google Compute Engine"}, result.ClassVM, "KVM"},
		{"unknown signature", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "NewVisorXYZ"},
			result.ClassVM, `unknown ("NewVisorXYZ")`},
		{"bit without signature", ClassInput{CPUID: true, HypervisorBit: true}, result.ClassVM, "unknown"},
		{"qemu tcg signature", ClassInput{CPUID: true, HypervisorBit: true, HypervisorVendor: "TCGTCGTCGTCG",
			CPUModel: "AMD EPYC"}, result.ClassEmulated, "QEMU TCG"},
		{"qemu tcg cpu model", ClassInput{CPUID: true, HypervisorBit: true, CPUModel: "QEMU TCG CPU version 2.5+"},
			result.ClassEmulated, "QEMU TCG"},
		{"old qemu tcg, qemu64", ClassInput{CPUID: true, HypervisorBit: true, CPUModel: "QEMU Virtual CPU version 2.5+",
			DMIVendor: "QEMU"}, result.ClassEmulated, "QEMU TCG"},
		{"old qemu tcg, named model", ClassInput{CPUID: true, HypervisorBit: true, CPUModel: "Intel Core Processor (Skylake)",
			DMIVendor: "QEMU", DMIProduct: "Standard PC (i440FX + PIIX, 1996)"}, result.ClassEmulated, "QEMU TCG"},
		{"arm64 qemu", ClassInput{DMIVendor: "QEMU", DMIProduct: "KVM Virtual Machine"}, result.ClassVM, "KVM"},
		{"arm64 bare metal", ClassInput{DMIVendor: "Ampere(TM)", DMIProduct: "Mt.Jade"}, result.ClassBareMetal, ""},
		{"nothing known", ClassInput{}, result.ClassUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideClass(tc.in)
			if got.Class != tc.class || got.Hypervisor != tc.hv || got.Evidence == "" {
				t.Errorf("DecideClass(%+v) = %+v; want %s (%s) with evidence", tc.in, got, tc.class, tc.hv)
			}
		})
	}
}

func TestParseOSRelease(t *testing.T) {
	for in, want := range map[string]string{
		"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n": "Debian GNU/Linux 12 (bookworm)",
		"PRETTY_NAME='Alpine Linux v3.20'\n":                                          "Alpine Linux v3.20",
		"PRETTY_NAME=Fedora\n":                                                        "Fedora",
		"NAME=x\n":                                                                    "",
	} {
		if got := ParseOSRelease([]byte(in)); got != want {
			t.Errorf("ParseOSRelease(%q) = %q, want %q", in, got, want)
		}
	}
}

// readCapturedCPUID reads root/cpuid: "ok", "bit" and "vendor=..." lines.
func readCapturedCPUID(t *testing.T, root string) CPUIDInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "cpuid"))
	if err != nil {
		t.Fatal(err)
	}
	var c CPUIDInfo
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "ok":
			c.OK = v == "true"
		case "bit":
			c.Bit = v == "true"
		case "vendor":
			c.Vendor = v
		}
	}
	return c
}

// classFiles are the files readClassInput and readOSRelease read.
var classFiles = []string{
	"proc/cpuinfo",
	"sys/hypervisor/type",
	"sys/class/dmi/id/sys_vendor",
	"sys/class/dmi/id/product_name",
	"sys/firmware/acpi/tables/FACP",
	"etc/os-release",
}

// captureClassInputs returns this machine's class inputs as testdata
// files (path -> content): those of classFiles that exist (of the ACPI
// table, its 36-byte header) and "cpuid".
func captureClassInputs() map[string][]byte {
	out := map[string][]byte{}
	for _, f := range classFiles {
		b, err := os.ReadFile("/" + f)
		if err != nil {
			continue
		}
		if strings.HasPrefix(f, "sys/firmware/acpi/") && len(b) > 36 {
			b = b[:36]
		}
		out[f] = b
	}
	c := ReadCPUID()
	out["cpuid"] = fmt.Appendf(nil, "ok=%v\nbit=%v\nvendor=%s\n", c.OK, c.Bit, c.Vendor)
	return out
}

// captureEnv names the directory TestHostClassHere writes this machine's
// inputs to; in the lab guest, TestLabHostClass logs them instead.
const captureEnv = "TUNBENCH_CAPTURE_CLASS"

// TestHostClassHere checks the real detection against systemd-detect-virt
// --vm, which decides independently (CPUID, DMI, /sys/hypervisor, device
// tree): on the development machine (a Firecracker microVM on KVM), it
// says kvm and the class must be vm.
func TestHostClassHere(t *testing.T) {
	if labtest.InLab() {
		t.Skip("the lab guest is TestLabHostClass's")
	}
	if dir := os.Getenv(captureEnv); dir != "" {
		for name, b := range captureClassInputs() {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := ReadClass()
	t.Logf("this machine: %+v", got)
	out, err := exec.Command("systemd-detect-virt", "--vm").Output()
	virt := strings.TrimSpace(string(out))
	if virt == "" {
		t.Skipf("systemd-detect-virt --vm gave no answer (%v), nothing to check the class against", err)
	}
	switch virt {
	case "none":
		if got.Class != result.ClassBareMetal {
			t.Errorf("systemd-detect-virt says none, class %+v", got)
		}
	case "qemu":
		// systemd says qemu for QEMU without KVM: software emulation.
		if got.Class != result.ClassEmulated {
			t.Errorf("systemd-detect-virt says qemu (TCG), class %+v", got)
		}
	default:
		if got.Class != result.ClassVM {
			t.Errorf("systemd-detect-virt says %s, class %+v", virt, got)
		}
	}
	if virt == "kvm" && !slices.Contains([]string{"KVM", "Firecracker", "Cloud Hypervisor"}, got.Hypervisor) {
		t.Errorf("systemd-detect-virt says kvm, hypervisor %q", got.Hypervisor)
	}
	h, err := Collect(context.Background(), ExecRunner{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Class != got.Class || h.Hypervisor != got.Hypervisor || h.Emulated != (got.Class == result.ClassEmulated) {
		t.Errorf("Collect: class %q (%q), emulated %v; ReadClass %+v", h.Class, h.Hypervisor, h.Emulated, got)
	}
}

// TestHostClassInLab boots the kernel lab's guest and runs TestLabHostClass
// there. Set TUNBENCH_CAPTURE_CLASS=1 to have the guest log its inputs.
func TestHostClassInLab(t *testing.T) {
	var env []string
	if v := os.Getenv(captureEnv); v != "" {
		env = append(env, captureEnv+"=1")
	}
	labtest.RunTestsInGuestWith(t, ".", "^TestLabHostClass$", labtest.Options{Env: env})
}

// TestLabHostClass runs inside the lab's guest: under software emulation
// (the lab sets TUNBENCH_EMULATED=1) the guest must find itself emulated
// from what the machine says, without that variable, as a "tunbench run"
// started by hand inside the guest would; under KVM, a KVM vm.
func TestLabHostClass(t *testing.T) {
	if !labtest.InLab() {
		t.Skip("needs the lab's guest: run through TestHostClassInLab")
	}
	tcg := os.Getenv(lab.EnvEmulated) == "1"
	t.Setenv(lab.EnvEmulated, "")
	got := ReadClass()
	t.Logf("lab guest (tcg %v): %+v", tcg, got)
	if os.Getenv(captureEnv) != "" {
		for name, b := range captureClassInputs() {
			t.Logf("capture %s %q", name, b)
		}
	}
	if tcg {
		if got.Class != result.ClassEmulated || got.Hypervisor != "QEMU TCG" {
			t.Errorf("guest under TCG: class %+v, want emulated (QEMU TCG)", got)
		}
	} else if got.Class != result.ClassVM || got.Hypervisor != "KVM" {
		t.Errorf("guest under KVM: class %+v, want vm (KVM)", got)
	}
	h, err := Collect(context.Background(), ExecRunner{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Emulated != tcg || h.Class != got.Class || h.OSRelease == "" {
		t.Errorf("Collect in the guest: class %q, emulated %v, os release %q; want emulated %v", h.Class, h.Emulated, h.OSRelease, tcg)
	}
}
