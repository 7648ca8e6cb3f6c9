package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// workspace is the host directory of one Run: the initramfs, and the
// results share with the lab's control files in controlDir.
type workspace struct {
	dir     string
	created bool // Run made dir, so Run removes it
}

func newWorkspace(dir string) (*workspace, error) {
	ws := &workspace{dir: dir}
	if dir == "" {
		d, err := os.MkdirTemp("", "tunbench-lab-")
		if err != nil {
			return nil, fmt.Errorf("lab work dir: %w", err)
		}
		ws.dir, ws.created = d, true
	} else {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("lab work dir: %w", err)
		}
		ws.dir = abs
	}
	// A control directory left by an earlier run would hand us its exit code.
	if err := os.RemoveAll(ws.control()); err != nil {
		return nil, fmt.Errorf("lab work dir: %w", err)
	}
	if err := os.MkdirAll(ws.control(), 0o755); err != nil {
		ws.remove()
		return nil, fmt.Errorf("lab work dir: %w", err)
	}
	return ws, nil
}

func (ws *workspace) initramfs() string { return filepath.Join(ws.dir, "initramfs.cpio") }
func (ws *workspace) results() string   { return ResultsDir(ws.dir) }
func (ws *workspace) control() string   { return filepath.Join(ws.results(), controlDir) }

// writeInitramfs builds the initramfs file.
func (ws *workspace) writeInitramfs(k Kernel, stage2Script string) error {
	f, err := os.OpenFile(ws.initramfs(), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := writeInitramfs(f, k, BusyboxPath, stage2Script); err != nil {
		f.Close()
		return fmt.Errorf("lab: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// remove deletes what Run created: the whole directory when Run made it,
// else the initramfs and the control directory, leaving the caller's files.
func (ws *workspace) remove() error {
	if ws.created {
		if err := os.RemoveAll(ws.dir); err != nil {
			return fmt.Errorf("lab: remove work dir: %w", err)
		}
		return nil
	}
	var errs []error
	if err := os.Remove(ws.initramfs()); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(ws.control()); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab: clean work dir: %w", err)
	}
	return nil
}

// keepsResults reports whether the results share outlives Run.
func (ws *workspace) keepsResults(keep bool) bool { return keep || !ws.created }
