package hostinfo

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// CPUIDInfo is what the CPUID instruction says about a hypervisor.
type CPUIDInfo struct {
	OK     bool   // CPUID was read (x86)
	Bit    bool   // leaf 1 ECX bit 31
	Vendor string // leaf 0x40000000 signature, trimmed; only when Bit
}

// ReadCPUID reads the hypervisor bit and signature through
// github.com/klauspost/cpuid. The signature is kept only when the bit is
// set: without a hypervisor, leaf 0x40000000 is out of range and Intel
// processors answer it with the highest basic leaf's data.
func ReadCPUID() CPUIDInfo {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		return CPUIDInfo{}
	}
	c := CPUIDInfo{OK: true, Bit: cpuid.CPU.Supports(cpuid.HYPERVISOR)}
	if c.Bit {
		c.Vendor = trimSignature(cpuid.CPU.HypervisorVendorString)
	}
	return c
}

func trimSignature(s string) string { return strings.Trim(s, " \x00") }

// ReadClass decides this machine's class (see DecideClass) from CPUID and
// the files under / (see readClassInput).
func ReadClass() HostClass { return DecideClass(readClassInput("/", ReadCPUID())) }

// readClassInput reads a ClassInput from the tree at root: proc/cpuinfo,
// sys/hypervisor/type, sys/class/dmi/id/{sys_vendor,product_name} and the
// header of sys/firmware/acpi/tables/FACP (readable by root only). Missing
// files leave their fields empty.
func readClassInput(root string, c CPUIDInfo) ClassInput {
	in := ClassInput{CPUID: c.OK, HypervisorBit: c.Bit, HypervisorVendor: c.Vendor}
	if b, err := os.ReadFile(filepath.Join(root, "proc", "cpuinfo")); err == nil {
		in.CPUModel, in.CPUFlagHypervisor = cpuinfoVirt(b)
	}
	in.SysHypervisor = readTrimmed(filepath.Join(root, "sys", "hypervisor", "type"))
	in.DMIVendor = readTrimmed(filepath.Join(root, "sys", "class", "dmi", "id", "sys_vendor"))
	in.DMIProduct = readTrimmed(filepath.Join(root, "sys", "class", "dmi", "id", "product_name"))
	in.ACPIOEM = acpiOEMID(filepath.Join(root, "sys", "firmware", "acpi", "tables", "FACP"))
	return in
}

// cpuinfoVirt returns the first processor's model name and whether its
// flags include "hypervisor".
func cpuinfoVirt(data []byte) (model string, hypervisor bool) {
	model = ParseCPUInfo(data).Model
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "flags" {
			for f := range strings.FieldsSeq(val) {
				if f == "hypervisor" {
					return model, true
				}
			}
			return model, false
		}
	}
	return model, false
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// acpiOEMID is the OEM ID (bytes 10-15 of the standard header) of the
// ACPI table at path, trimmed; "" when unreadable.
func acpiOEMID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var h [16]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return ""
	}
	return strings.Trim(string(h[10:16]), " \x00")
}

// readOSRelease returns PRETTY_NAME from root/etc/os-release, else from
// root/usr/lib/os-release (os-release(5)); "" when neither has it.
func readOSRelease(root string) string {
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			continue
		}
		return ParseOSRelease(b)
	}
	return ""
}

// ParseOSRelease returns PRETTY_NAME from the content of an os-release
// file, unquoted; "" when absent.
func ParseOSRelease(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return strings.Trim(v, `"'`)
	}
	return ""
}
