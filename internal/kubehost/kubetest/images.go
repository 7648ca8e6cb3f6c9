package kubetest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Busybox is the busybox-static binary the busybox image carries.
const Busybox = "/bin/busybox"

// imageFile is one file of an image's single layer.
type imageFile struct {
	name    string
	mode    int64
	data    []byte
	symlink string // target, for a symlink
	dir     bool
}

// writeImage writes a docker-archive tar (one layer, a config,
// manifest.json) for ref to path: what "ctr images import" loads.
func writeImage(path, ref string, files []imageFile, entrypoint, cmd []string) error {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	mtime := time.Unix(0, 0)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		case f.symlink != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.symlink
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.data); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	sum := sha256.Sum256(layer.Bytes())
	diffID := "sha256:" + hex.EncodeToString(sum[:])
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      mtime.UTC().Format(time.RFC3339),
		"config": map[string]any{
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Entrypoint": entrypoint,
			"Cmd":        cmd,
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	if err != nil {
		return err
	}
	csum := sha256.Sum256(config)
	configName := hex.EncodeToString(csum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{ref},
		"Layers":   []string{"layer.tar"},
	}})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	aw := tar.NewWriter(&out)
	for _, e := range []struct {
		name string
		data []byte
	}{{"layer.tar", layer.Bytes()}, {configName, config}, {"manifest.json", manifest}} {
		if err := aw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := aw.Write(e.data); err != nil {
			return err
		}
	}
	if err := aw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// busyboxImage writes the busybox image: /bin/busybox with a symlink per
// applet in /bin, so that sh, sleep, chroot, cat, ping... are there.
func busyboxImage(path, ref string) error {
	files, err := busyboxFiles()
	if err != nil {
		return err
	}
	return writeImage(path, ref, files, nil, []string{"sh"})
}

// busyboxFiles are the busybox image's files.
func busyboxFiles() ([]imageFile, error) {
	data, err := os.ReadFile(Busybox)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", Busybox, err)
	}
	out, err := exec.Command(Busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", Busybox, err)
	}
	files := []imageFile{{name: "bin", mode: 0o755, dir: true}, {name: "bin/busybox", mode: 0o755, data: data}}
	for _, dir := range []string{"etc", "proc", "sys", "dev", "root", "var"} {
		files = append(files, imageFile{name: dir, mode: 0o755, dir: true})
	}
	files = append(files, imageFile{name: "tmp", mode: 0o1777, dir: true})
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			files = append(files, imageFile{name: "bin/" + applet, mode: 0o777, symlink: "busybox"})
		}
	}
	return files, nil
}

// ToolPrograms are the programs of this machine the tools image carries
// (at their paths here, ahead of busybox's applets in PATH), besides
// busybox: the load tool, wireguard-go's daemon, and the iproute2 ip and
// iputils ping the agent and the methods call.
var ToolPrograms = []string{"iperf3", "wireguard-go", "ip", "ping"}

// ToolsImageOS is the tools image's PRETTY_NAME (/etc/os-release).
const ToolsImageOS = "tunbench kubetest tools image"

// toolsImage writes the tools image: the busybox image (sh, sleep,
// nsenter, ... as applets) and ToolPrograms of this machine with every
// shared library they load (read with ldd), the dynamic loader included,
// each at its path here. It needs no file of the nodes: a run with
// kubernetes.tools: image takes every tool from it.
func toolsImage(path, ref string) error {
	files, err := busyboxFiles()
	if err != nil {
		return err
	}
	// An os-release of its own: a run records it as its hosts' OS, which
	// tells the image's tools from the node's.
	files = append(files, imageFile{name: "etc/os-release", mode: 0o644, data: []byte("NAME=\"tunbench kubetest tools\"\nPRETTY_NAME=\"" + ToolsImageOS + "\"\n")})
	// /var/run is /run, as on any FHS system: the userspace WireGuard
	// daemons bind a directory of their own on /run to keep their
	// sockets, which they make in /var/run/wireguard.
	files = append(files, imageFile{name: "run", mode: 0o755, dir: true}, imageFile{name: "var/run", mode: 0o777, symlink: "../run"})
	have := map[string]bool{}
	for _, f := range files {
		have[f.name] = true
	}
	add := func(src string) error {
		name := strings.TrimPrefix(filepath.Clean(src), "/")
		if have[name] {
			return nil
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		// Parents first, as directories of the image.
		parts := strings.Split(name, "/")
		for i := 1; i < len(parts); i++ {
			if d := strings.Join(parts[:i], "/"); !have[d] {
				have[d] = true
				files = append(files, imageFile{name: d, mode: 0o755, dir: true})
			}
		}
		have[name] = true
		files = append(files, imageFile{name: name, mode: 0o755, data: data})
		return nil
	}
	for _, prog := range ToolPrograms {
		p, err := exec.LookPath(prog)
		if err != nil {
			return fmt.Errorf("tools image: %w", err)
		}
		// /sbin/ip is /usr/sbin/ip on a merged-/usr system: the image
		// keeps the real path (its /bin and /sbin are busybox's).
		if p, err = filepath.EvalSymlinks(p); err != nil {
			return fmt.Errorf("tools image: %w", err)
		}
		if err := add(p); err != nil {
			return fmt.Errorf("tools image: %w", err)
		}
		libs, err := sharedLibraries(p)
		if err != nil {
			return fmt.Errorf("tools image: %w", err)
		}
		for _, l := range libs {
			if err := add(l); err != nil {
				return fmt.Errorf("tools image: %s needs %s: %w", p, l, err)
			}
		}
	}
	return writeImage(path, ref, files, nil, []string{"sh"})
}

// sharedLibraries returns the files ldd says prog loads: each library
// ("libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)") and the
// dynamic loader ("/lib64/ld-linux-x86-64.so.2 (0x...)"), at the paths
// the loader looks for them; nothing for a static program.
func sharedLibraries(prog string) ([]string, error) {
	out, err := exec.Command("ldd", prog).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %w: %s", prog, err, out)
	}
	var libs []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("ldd %s: %s is not found", prog, f[0])
		}
	}
	return libs, nil
}

// pauseImage writes the pause image around the pause program at bin.
func pauseImage(path, ref, bin string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return writeImage(path, ref, []imageFile{{name: "pause", mode: 0o755, data: data}}, []string{"/pause"}, nil)
}
