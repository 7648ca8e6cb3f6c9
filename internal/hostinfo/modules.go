package hostinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Modules answers whether kernel modules are loaded or installed.
type Modules struct {
	Dir         string // /lib/modules/<release>
	ProcModules string // /proc/modules: the loaded modules
	// Files reads Dir and ProcModules: nil is this machine's files;
	// another host's are read through its own Files (internal/bed/ssh reads them
	// over SSH).
	Files Files
}

// HostModules describes the running kernel's modules.
func HostModules() (Modules, error) {
	rel, err := release()
	if err != nil {
		return Modules{}, err
	}
	return ModulesOf(nil, rel), nil
}

// ModulesOf describes the modules of a host whose kernel is release (its
// `uname -r`), read through files (nil: this machine's).
func ModulesOf(files Files, release string) Modules {
	return Modules{Dir: path.Join("/lib/modules", release), ProcModules: "/proc/modules", Files: files}
}

func (m Modules) files() Files {
	if m.Files == nil {
		return LocalFiles{}
	}
	return m.Files
}

// FeatureUsable reports whether option can be used on this kernel:
//   - "=y" (built in): yes;
//   - "=m": yes if the module is already loaded (listed in /proc/modules)
//     or its file (NAME.ko, .ko.xz, .ko.zst or .ko.gz) is installed under
//     /lib/modules/$(uname -r), found through modules.dep when present and
//     by walking the directory otherwise; a kernel without /proc/modules or
//     without that directory has none;
//   - anything else (not set, absent): no.
//
// module names the module option builds (the method's requirement says
// it: method.Requirement.Module); an "=m" option without one is an error.
// '-' and '_' in module names are equivalent, as for modprobe.
func (m Modules) FeatureUsable(cfg map[string]string, option, module string) (bool, error) {
	option = configName(option)
	switch cfg[option] {
	case "y":
		return true, nil
	case "m":
	default:
		return false, nil
	}
	if module == "" {
		return false, fmt.Errorf("check %s=m: module name unknown: the requirement must name the module that provides it", option)
	}
	return m.Available(module)
}

// Available reports whether module is loaded or installed.
func (m Modules) Available(module string) (bool, error) {
	want := normModule(module)
	loaded, err := m.loaded()
	if err != nil {
		return false, err
	}
	if loaded[want] {
		return true, nil
	}
	return m.installed(want)
}

func normModule(name string) string { return strings.ReplaceAll(name, "-", "_") }

func (m Modules) loaded() (map[string]bool, error) {
	data, err := m.files().ReadFile(m.ProcModules)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read loaded modules: %w", err)
	}
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			out[normModule(f[0])] = true
		}
	}
	return out, nil
}

// moduleFileName returns the module name of a file such as ip_gre.ko.xz.
func moduleFileName(p string) (string, bool) {
	base := path.Base(p)
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if name, ok := strings.CutSuffix(base, ext); ok {
			return normModule(name), true
		}
	}
	return "", false
}

func (m Modules) installed(want string) (bool, error) {
	dep, err := m.files().ReadFile(path.Join(m.Dir, "modules.dep"))
	if err == nil {
		sc := bufio.NewScanner(bytes.NewReader(dep))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p, _, _ := strings.Cut(sc.Text(), ":")
			if name, ok := moduleFileName(p); ok && name == want {
				return true, nil
			}
		}
		return false, sc.Err()
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read modules.dep: %w", err)
	}
	names, err := m.files().FileNames(m.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("search modules in %s: %w", m.Dir, err)
	}
	for _, p := range names {
		if name, ok := moduleFileName(p); ok && name == want {
			return true, nil
		}
	}
	return false, nil
}
