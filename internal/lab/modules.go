package lab

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ulikunitz/xz"
)

// bootModules are the modules stage 1 needs to mount the host's root over
// virtio 9p and lay an overlay on it. Their dependencies (virtio,
// virtio_ring, 9pnet, netfs, fscache on 6.1) come from modules.dep; those
// the kernel has built in (virtio_pci on 6.12) are skipped.
var bootModules = []string{"virtio_pci", "9pnet_virtio", "9p", "overlay"}

// moduleIndex is a kernel's modules.dep and modules.builtin: module name
// (dashes folded to underscores) to its path relative to the modules
// directory, and to the paths of the modules it depends on.
type moduleIndex struct {
	path    map[string]string
	deps    map[string][]string
	builtin map[string]bool
}

// moduleName is the name insmod and modprobe know a module file by:
// "kernel/net/9p/9pnet_virtio.ko.xz" -> "9pnet_virtio".
func moduleName(file string) string {
	base := path.Base(file)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

// parseModulesDep reads modules.dep ("path: dep dep ...") and, when
// builtin is not nil, modules.builtin (one path a line).
func parseModulesDep(dep, builtin io.Reader) (*moduleIndex, error) {
	idx := &moduleIndex{path: map[string]string{}, deps: map[string][]string{}, builtin: map[string]bool{}}
	sc := bufio.NewScanner(dep)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		mod, rest, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("modules.dep line %d: no colon in %q", n, line)
		}
		name := moduleName(mod)
		idx.path[name] = mod
		idx.deps[name] = strings.Fields(rest)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("modules.dep: %w", err)
	}
	if builtin != nil {
		sc := bufio.NewScanner(builtin)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				idx.builtin[moduleName(line)] = true
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("modules.builtin: %w", err)
		}
	}
	return idx, nil
}

// loadOrder returns the module files (relative paths) needed to load the
// named modules, dependencies first, each once. Built-in modules are
// skipped; a module the kernel has neither as a file nor built in is an
// error.
func (idx *moduleIndex) loadOrder(names []string) ([]string, error) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var order []string
	var visit func(name, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("modules.dep has a dependency cycle through %s", name)
		}
		file, ok := idx.path[name]
		if !ok {
			if idx.builtin[name] {
				state[name] = done
				return nil
			}
			if from != "" {
				return fmt.Errorf("module %s (needed by %s) is not in modules.dep", name, from)
			}
			return fmt.Errorf("module %s is neither in modules.dep nor built in", name)
		}
		state[name] = visiting
		for _, d := range idx.deps[name] {
			if err := visit(moduleName(d), name); err != nil {
				return err
			}
		}
		state[name] = done
		order = append(order, file)
		return nil
	}
	for _, n := range names {
		if err := visit(strings.ReplaceAll(n, "-", "_"), ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// loadModuleIndex parses the modules.dep and modules.builtin of a modules
// directory.
func loadModuleIndex(modulesDir string) (*moduleIndex, error) {
	dep, err := os.Open(filepath.Join(modulesDir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("kernel modules: %w: run depmod", err)
	}
	defer dep.Close()
	var builtin io.Reader
	if f, err := os.Open(filepath.Join(modulesDir, "modules.builtin")); err == nil {
		defer f.Close()
		builtin = f
	}
	idx, err := parseModulesDep(dep, builtin)
	if err != nil {
		return nil, fmt.Errorf("kernel modules %s: %w", modulesDir, err)
	}
	return idx, nil
}

// readModule returns a module file's contents, decompressed: busybox insmod
// loads only plain ELF objects. .ko, .ko.xz and .ko.gz are understood.
func readModule(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read module: %w", err)
	}
	defer f.Close()
	var r io.Reader
	switch {
	case strings.HasSuffix(file, ".ko"):
		r = f
	case strings.HasSuffix(file, ".ko.xz"):
		xr, err := xz.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("read module %s: xz: %w", file, err)
		}
		r = xr
	case strings.HasSuffix(file, ".ko.gz"):
		gr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("read module %s: gzip: %w", file, err)
		}
		defer gr.Close()
		r = gr
	default:
		return nil, fmt.Errorf("read module %s: unsupported compression: want .ko, .ko.xz or .ko.gz", file)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read module %s: %w", file, err)
	}
	if len(b) < 4 || string(b[:4]) != "\x7fELF" {
		return nil, fmt.Errorf("read module %s: not an ELF object after decompression", file)
	}
	return b, nil
}
