package kubetest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestToolsImage builds the tools image, unpacks its layer into a
// directory and runs each program there under chroot: every library it
// loads is in the image, and busybox's sh and nsenter are applets.
func TestToolsImage(t *testing.T) {
	testbedtest.RequireNetAdmin(t) // chroot
	if _, err := os.Stat(Busybox); err != nil {
		testenv.SkipMissing(t, "kubetest: needs %s (Debian package busybox-static): %v", Busybox, err)
	}
	for _, p := range ToolPrograms {
		testenv.NeedProgram(t, p, "scripts/install.sh test installs it")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "tools.tar")
	begin := time.Now()
	if err := toolsImage(img, ToolsImage); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools image built in %v, %.1f MB", time.Since(begin).Round(time.Millisecond), float64(fi.Size())/1e6)

	root := filepath.Join(dir, "root")
	if err := unpackLayer(img, root); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{"/bin/sh", "-c", "echo ok"},
		{"/usr/bin/iperf3", "--version"},
		{"/usr/local/bin/wireguard-go", "--version"},
		{"/usr/sbin/ip", "-V"},
		{"/usr/bin/ping", "-V"},
		{"/bin/nsenter", "--help"},
	} {
		// The programs' paths are this machine's; LookPath's answer is
		// what the image holds.
		if p, err := exec.LookPath(filepath.Base(argv[0])); err == nil && argv[0] != "/bin/sh" && argv[0] != "/bin/nsenter" {
			if p, err = filepath.EvalSymlinks(p); err == nil {
				argv[0] = p
			}
		}
		out, err := exec.Command("chroot", append([]string{root}, argv...)...).CombinedOutput()
		if err != nil && !(argv[0] == "/bin/nsenter" && strings.Contains(string(out), "Usage")) {
			t.Errorf("chroot IMAGE %s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
}

// unpackLayer extracts the single layer of the docker-archive tar at img
// into root.
func unpackLayer(img, root string) error {
	f, err := os.Open(img)
	if err != nil {
		return err
	}
	defer f.Close()
	outer := tar.NewReader(f)
	var layer []byte
	var manifest []struct{ Layers []string }
	for {
		h, err := outer.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		data, err := io.ReadAll(outer)
		if err != nil {
			return err
		}
		switch h.Name {
		case "layer.tar":
			layer = data
		case "manifest.json":
			if err := json.Unmarshal(data, &manifest); err != nil {
				return err
			}
		}
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 || layer == nil {
		return errors.New("not a one-layer docker archive")
	}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, os.FileMode(h.Mode)&os.ModePerm)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, dst)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				var data []byte
				if data, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(dst, data, os.FileMode(h.Mode)&os.ModePerm)
				}
			}
		}
		if err != nil {
			return err
		}
	}
}
