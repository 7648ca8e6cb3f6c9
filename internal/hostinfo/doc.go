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
// Kernel configuration: ParseKernelConfig is pure. LoadKernelConfig reads
// /proc/config.gz, else /boot/config-$(uname -r), else fails with
// ErrNoKernelConfig. HasKernelFeature counts "=y" and "=m" alike;
// Modules.FeatureUsable counts "=m" only when the module is loaded or its
// file is installed (see FeatureUsable for the exact rule).
package hostinfo
