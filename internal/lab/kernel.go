package lab

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Kernel is a guest kernel: a bzImage and the modules built with it.
// The zero value is not usable; build one with FromPath or Fetch.
type Kernel struct {
	// Image is the path of the bzImage (a vmlinuz).
	Image string
	// Modules is the modules directory for Version, i.e. .../lib/modules/<Version>.
	Modules string
	// Version is the kernel release, as uname -r prints it in the guest.
	Version string
}

// ErrNotBzImage marks a kernel image that is not a Linux bzImage.
var ErrNotBzImage = errors.New("not a bzImage")

// Offsets into the Linux x86 boot protocol header (Documentation/x86/boot.rst).
const (
	hdrMagicOffset      = 0x202 // "HdrS"
	hdrVersionOffset    = 0x206 // boot protocol version, u16
	hdrKernelVerOffset  = 0x20E // kernel_version pointer, u16, relative to 0x200
	hdrKernelVerBase    = 0x200
	hdrMinProtocol      = 0x200 // kernel_version exists from protocol 2.00 on
	maxKernelVersionLen = 256
)

// FromPath validates a kernel image and its modules directory and returns
// the Kernel they describe. The image must be a bzImage; its version string
// (from the boot protocol header) must match the modules directory's name.
func FromPath(image, modulesDir string) (Kernel, error) {
	version, err := ImageVersion(image)
	if err != nil {
		return Kernel{}, err
	}
	fi, err := os.Stat(modulesDir)
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel modules for %s: %w: pass the lib/modules/%s directory of the package that holds %s", version, err, version, image)
	}
	if !fi.IsDir() {
		return Kernel{}, fmt.Errorf("kernel modules %s: not a directory: pass the lib/modules/%s directory of the package that holds %s", modulesDir, version, image)
	}
	if got := filepath.Base(filepath.Clean(modulesDir)); got != version {
		return Kernel{}, fmt.Errorf("kernel modules %s are for kernel %s but %s is kernel %s: pass the lib/modules/%s directory unpacked from the same package", modulesDir, got, image, version, version)
	}
	absImage, err := filepath.Abs(image)
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel %s: %w", image, err)
	}
	absModules, err := filepath.Abs(modulesDir)
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel modules %s: %w", modulesDir, err)
	}
	return Kernel{Image: absImage, Modules: absModules, Version: version}, nil
}

// ImageVersion reads the kernel release (e.g. "6.1.0-56-amd64") from a
// bzImage's boot protocol header. A file that is not a bzImage yields an
// error wrapping ErrNotBzImage.
func ImageVersion(image string) (string, error) {
	f, err := os.Open(image)
	if err != nil {
		return "", fmt.Errorf("kernel %s: %w: pass a vmlinuz", image, err)
	}
	defer f.Close()
	v, err := parseBzImageVersion(f)
	if err != nil {
		return "", fmt.Errorf("kernel %s is %w: pass a vmlinuz", image, err)
	}
	return v, nil
}

// parseBzImageVersion returns the first word of the header's kernel_version
// string.
func parseBzImageVersion(r io.ReaderAt) (string, error) {
	var hdr [hdrKernelVerOffset + 2]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return "", fmt.Errorf("%w (too short for a boot header: %v)", ErrNotBzImage, err)
	}
	if string(hdr[hdrMagicOffset:hdrMagicOffset+4]) != "HdrS" {
		return "", fmt.Errorf("%w (no HdrS magic at 0x202)", ErrNotBzImage)
	}
	if proto := binary.LittleEndian.Uint16(hdr[hdrVersionOffset:]); proto < hdrMinProtocol {
		return "", fmt.Errorf("%w (boot protocol %#x is older than 2.00 and has no version string)", ErrNotBzImage, proto)
	}
	ptr := int64(binary.LittleEndian.Uint16(hdr[hdrKernelVerOffset:]))
	if ptr == 0 {
		return "", fmt.Errorf("%w (kernel_version pointer at 0x20e is zero)", ErrNotBzImage)
	}
	buf := make([]byte, maxKernelVersionLen)
	n, err := r.ReadAt(buf, ptr+hdrKernelVerBase)
	if n == 0 {
		return "", fmt.Errorf("%w (kernel_version points past the end of the file: %v)", ErrNotBzImage, err)
	}
	buf = buf[:n]
	end := bytes.IndexByte(buf, 0)
	if end < 0 {
		return "", fmt.Errorf("%w (kernel_version string is not NUL-terminated)", ErrNotBzImage)
	}
	fields := strings.Fields(string(buf[:end]))
	if len(fields) == 0 {
		return "", fmt.Errorf("%w (kernel_version string is empty)", ErrNotBzImage)
	}
	return fields[0], nil
}
