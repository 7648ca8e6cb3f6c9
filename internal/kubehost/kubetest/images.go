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
	data, err := os.ReadFile(Busybox)
	if err != nil {
		return fmt.Errorf("read %s: %w", Busybox, err)
	}
	out, err := exec.Command(Busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", Busybox, err)
	}
	files := []imageFile{{name: "bin", mode: 0o755, dir: true}, {name: "bin/busybox", mode: 0o755, data: data}}
	for _, dir := range []string{"etc", "tmp", "proc", "sys", "dev", "root", "var"} {
		files = append(files, imageFile{name: dir, mode: 0o755, dir: true})
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			files = append(files, imageFile{name: "bin/" + applet, mode: 0o777, symlink: "busybox"})
		}
	}
	return writeImage(path, ref, files, nil, []string{"sh"})
}

// pauseImage writes the pause image around the pause program at bin.
func pauseImage(path, ref, bin string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return writeImage(path, ref, []imageFile{{name: "pause", mode: 0o755, data: data}}, []string{"/pause"}, nil)
}
