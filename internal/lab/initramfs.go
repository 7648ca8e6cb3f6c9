package lab

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// BusyboxPath is the statically linked busybox of Debian's busybox-static,
// the only program in the initramfs.
const BusyboxPath = "/bin/busybox"

// busyboxApplets are the commands stage 1 calls, linked to busybox.
var busyboxApplets = []string{"sh", "mount", "insmod", "mkdir", "mknod", "cp", "ip", "hostname", "switch_root", "poweroff", "sleep"}

// checkStaticBusybox fails unless path is a statically linked ELF program:
// the initramfs has no dynamic loader or libraries.
func checkStaticBusybox(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("busybox %s: %w: install busybox-static (apt-get install -y --no-install-recommends busybox-static)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("busybox %s is dynamically linked: install busybox-static (apt-get install -y --no-install-recommends busybox-static)", path)
		}
	}
	return nil
}

// writeInitramfs writes an uncompressed newc initramfs for kernel k to w:
// busybox, the decompressed modules that mounting 9p and overlay needs (in
// modules.dep order), /init (stage 1) and /stage2.
func writeInitramfs(w io.Writer, k Kernel, busybox, stage2Script string) error {
	if err := checkStaticBusybox(busybox); err != nil {
		return err
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	idx, err := loadModuleIndex(k.Modules)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	files, err := idx.loadOrder(bootModules)
	if err != nil {
		return fmt.Errorf("initramfs: kernel %s: %w", k.Version, err)
	}
	s1 := stage1{KernelVersion: k.Version, ModulesDir: k.Modules}
	bw := bufio.NewWriterSize(w, 1<<20)
	c := newCPIOWriter(bw)
	for _, d := range []string{"bin", "dev", "proc", "sys", "lib", "lib/modules", "lower", "upper", "newroot"} {
		c.dir(d, 0o755)
	}
	c.charDev("dev/console", 0o600, 5, 1)
	c.file("bin/busybox", 0o755, bb)
	for _, a := range busyboxApplets {
		c.symlink("bin/"+a, "busybox")
	}
	for _, f := range files {
		data, err := readModule(filepath.Join(k.Modules, f))
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		name := moduleName(f)
		s1.Modules = append(s1.Modules, name)
		c.file(initModDir+"/"+name+".ko", 0o644, data)
	}
	c.file("init", 0o755, []byte(s1.script()))
	c.file("stage2", 0o755, []byte(stage2Script))
	c.file(probeInit[1:], 0o755, []byte(probeScript))
	if err := c.close(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}
