package lab

import (
	"context"
	"fmt"
	"os"
)

// Environment variables that point the lab at a kernel of the caller's
// choice instead of the cached default.
const (
	EnvKernel  = "TUNBENCH_LAB_KERNEL"  // path of a vmlinuz
	EnvModules = "TUNBENCH_LAB_MODULES" // its lib/modules/<version> directory
)

// DefaultKernel returns the kernel named by TUNBENCH_LAB_KERNEL and
// TUNBENCH_LAB_MODULES when both are set, and otherwise the kernel Fetch
// keeps in DefaultCacheDir for DefaultKernelMeta (downloading it on first use).
func DefaultKernel(ctx context.Context) (Kernel, error) {
	image, modules := os.Getenv(EnvKernel), os.Getenv(EnvModules)
	switch {
	case image != "" && modules != "":
		return FromPath(image, modules)
	case image != "" || modules != "":
		return Kernel{}, fmt.Errorf("lab kernel: set both %s and %s, or neither to use the cached Debian kernel", EnvKernel, EnvModules)
	}
	return Fetch(ctx, "", "")
}
