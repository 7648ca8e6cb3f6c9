// Package hostinfo collects the metadata every result carries, flent-style:
// who measured (hostname, kernel, CPU, memory), with what (tunbench and Go
// versions, the versions of the network tools installed) and under which
// settings (the networking sysctls that shape TCP throughput). It also
// reads the kernel configuration, so a run can tell which tunnel methods
// this kernel can carry at all.
//
// Collect reads /proc and runs each known tool's version command through a
// Runner, the one boundary to the operating system's commands; tests pass a
// fake. A tool that is not installed is left out of Host.Tools; one that is
// installed but gives no recognisable version is listed as "unknown".
// Sysctls that do not exist on the running kernel are left out.
//
// Host class: DecideClass is pure; it decides bare-metal, vm (with the
// hypervisor) or emulated (QEMU TCG) from a ClassInput: CPUID's hypervisor
// bit and leaf 0x40000000 signature, /proc/cpuinfo, /sys/hypervisor/type,
// DMI and the ACPI tables' OEM ID. ReadClass reads that input from the
// running machine (CPUID through github.com/klauspost/cpuid); Collect
// records the answer and sets Host.Emulated for an emulated host.
//
// Kernel configuration: ParseKernelConfig is pure. LoadKernelConfig reads
// /proc/config.gz, else /boot/config-$(uname -r), else fails with
// ErrNoKernelConfig. HasKernelFeature counts "=y" and "=m" alike;
// Modules.FeatureUsable counts "=m" only when the module is loaded or its
// file is installed (see FeatureUsable for the exact rule). Kernel puts
// the two together for one host: LocalKernel reads this machine's,
// ReadKernel another host's through its Files (the ssh testbed reads a
// host's files over SSH), so one rule decides for every host.
package hostinfo
