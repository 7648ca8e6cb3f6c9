package hostinfo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Files reads the files of one host by absolute path: this machine's
// (LocalFiles) or another host's (the ssh testbed reads them over the
// host's SSH connection). Reading the kernel config and modules through
// it applies one set of rules to every host.
type Files interface {
	// ReadFile returns the content of the file name. A file that does
	// not exist is an error matching fs.ErrNotExist.
	ReadFile(name string) ([]byte, error)
	// FileNames returns the paths of the regular files under dir, at
	// any depth. A dir that does not exist is an error matching
	// fs.ErrNotExist.
	FileNames(dir string) ([]string, error)
}

// LocalFiles reads this machine's files.
type LocalFiles struct{}

// ReadFile is os.ReadFile.
func (LocalFiles) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// FileNames walks dir.
func (LocalFiles) FileNames(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Kernel is what decides which kernel options one host can use: its
// kernel config and its modules.
type Kernel struct {
	// Release is the kernel's `uname -r`.
	Release string
	// Config is the kernel config; nil when the host has none to read
	// (neither /proc/config.gz nor /boot/config-<release>).
	Config map[string]string
	// Modules are the host's loaded and installed modules.
	Modules Modules
}

// LocalKernel reads this machine's kernel config and modules. A machine
// without a kernel config is not an error: its Config is nil.
func LocalKernel() (Kernel, error) {
	rel, err := release()
	if err != nil {
		return Kernel{}, err
	}
	return ReadKernel(nil, rel)
}

// ReadKernel reads, through files (nil: this machine's), the kernel of a
// host whose kernel is release (its `uname -r`): the config from
// /proc/config.gz, else /boot/config-<release>, and the modules of
// /proc/modules and /lib/modules/<release>. A host without a kernel
// config is not an error: its Config is nil. Modules are read when an
// option needs them.
func ReadKernel(files Files, release string) (Kernel, error) {
	k := Kernel{Release: release, Modules: ModulesOf(files, release)}
	if files == nil {
		files = LocalFiles{}
	}
	cfg, err := LoadKernelConfigFrom(files, release)
	if err != nil && !errors.Is(err, ErrNoKernelConfig) {
		return k, err
	}
	k.Config = cfg
	return k, nil
}

// Known reports whether the kernel config could be read, i.e. whether
// Usable answers from it.
func (k Kernel) Known() bool { return k.Config != nil }

// Usable reports whether the kernel can use option: built in, or a
// module that is loaded or installed (Modules.FeatureUsable). Without a
// kernel config it cannot tell and says yes: setting the method up then
// fails with the kernel's own error.
//
// module is the module that provides option when it is built as one.
func (k Kernel) Usable(option, module string) (bool, error) {
	if k.Config == nil {
		return true, nil
	}
	return k.Modules.FeatureUsable(k.Config, option, module)
}
