package remotehost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// WriteFile writes r to path on the host with mode: into a temporary file
// beside it, then chmod and rename, so that path is never seen half
// written (and a running binary at path is replaced, not overwritten).
func (h *Host) WriteFile(ctx context.Context, p string, r io.Reader, mode os.FileMode) error {
	if p == "" || strings.HasSuffix(p, "/") {
		return fmt.Errorf("remotehost: host %s: write file: path %q names no file", h.cfg.Name, p)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(p), ".tunbench-tmp-"+hex.EncodeToString(rnd[:])+"-"+path.Base(p))
	t, q := shellQuote(tmp), shellQuote(p)
	cmd := fmt.Sprintf("umask 077 && cat > %s && chmod %04o %s && mv -f %s %s || { rm -f %s; exit 1; }",
		t, mode.Perm(), t, t, q, t)
	_, _, err := h.run(ctx, []string{"write", p}, wrapScript(cmd), r)
	if err != nil {
		return fmt.Errorf("remotehost: host %s: write %s: %w", h.cfg.Name, p, err)
	}
	return nil
}

// notExistStatus is the exit status of ReadFile's and FileNames'
// commands for a path that does not exist (cat and find never exit so).
const notExistStatus = 66

// notExist turns the exit of a command run by ReadFile or FileNames for
// a missing path into an error matching fs.ErrNotExist.
func (h *Host) notExist(p string, err error) error {
	var ee *ExitError
	if errors.As(err, &ee) && ee.Status == notExistStatus {
		return fmt.Errorf("remotehost: host %s: %w", h.cfg.Name, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist})
	}
	return err
}

// ReadFile returns the content of path on the host. A path that does not
// exist there is an error matching fs.ErrNotExist.
func (h *Host) ReadFile(ctx context.Context, p string) ([]byte, error) {
	q := shellQuote(p)
	cmd := fmt.Sprintf("[ -e %s ] || exit %d; exec cat -- %s", q, notExistStatus, q)
	out, _, err := h.run(ctx, []string{"cat", "--", p}, wrapScript(cmd), nil)
	if err != nil {
		return nil, h.notExist(p, err)
	}
	return out, nil
}

// FileNames returns the paths of the regular files under dir on the host,
// at any depth (find DIR -type f), in one round trip. A dir that does not
// exist there is an error matching fs.ErrNotExist.
func (h *Host) FileNames(ctx context.Context, dir string) ([]string, error) {
	q := shellQuote(dir)
	cmd := fmt.Sprintf("[ -d %s ] || exit %d; exec find %s -type f", q, notExistStatus, q)
	out, _, err := h.run(ctx, []string{"find", dir, "-type", "f"}, wrapScript(cmd), nil)
	if err != nil {
		return nil, h.notExist(dir, err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" {
			names = append(names, l)
		}
	}
	return names, nil
}

// ParseVersion returns the version in the output of `tunbench version`,
// "tunbench VERSION (GOVERSION)".
func ParseVersion(out string) (string, error) {
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "tunbench" {
		return "", fmt.Errorf("not the output of `tunbench version`: %q", firstLine(out))
	}
	return f[1], nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// InstallSelf makes dir/tunbench on the host a tunbench whose `version`
// prints localVersion, and returns its path. An installed binary that
// already prints localVersion is reused; otherwise localBinary (this
// program) is uploaded with mode 0755 and its version checked. A version
// of "devel" (a build without VCS information) never matches, so such a
// build is always uploaded.
func (h *Host) InstallSelf(ctx context.Context, dir, localVersion, localBinary string) (string, error) {
	if !path.IsAbs(dir) {
		return "", fmt.Errorf("remotehost: host %s: install dir %q is not absolute: give an absolute remote directory", h.cfg.Name, dir)
	}
	remote := path.Join(dir, "tunbench")
	if localVersion != "devel" && localVersion != "" {
		if v, err := h.remoteVersion(ctx, remote); err == nil && v == localVersion {
			return remote, nil
		} else if ctx.Err() != nil || h.Err() != nil {
			return "", fmt.Errorf("remotehost: host %s: check %s: %w", h.cfg.Name, remote, err)
		}
	}
	f, err := os.Open(localBinary)
	if err != nil {
		return "", fmt.Errorf("remotehost: host %s: install tunbench: %w", h.cfg.Name, err)
	}
	defer f.Close()
	if _, _, err := h.Run(ctx, "mkdir", "-p", "--", dir); err != nil {
		return "", err
	}
	if err := h.WriteFile(ctx, remote, f, 0o755); err != nil {
		return "", err
	}
	v, err := h.remoteVersion(ctx, remote)
	if err != nil {
		return "", fmt.Errorf("remotehost: host %s: uploaded %s to %s, but it does not run: %w (is the host another architecture or OS? build tunbench for it)", h.cfg.Name, localBinary, remote, err)
	}
	if v != localVersion {
		return "", fmt.Errorf("remotehost: host %s: uploaded %s to %s, but it prints version %s, not %s: give the binary of this tunbench", h.cfg.Name, localBinary, remote, v, localVersion)
	}
	return remote, nil
}

func (h *Host) remoteVersion(ctx context.Context, remote string) (string, error) {
	out, _, err := h.Run(ctx, remote, "version")
	if err != nil {
		return "", err
	}
	return ParseVersion(string(out))
}

// Tool is a program a host needs and the Debian package that installs it.
type Tool struct {
	Program string
	Package string // empty: the package is named like the program
	// Install is the command that installs Program when that is not an
	// apt-get install of Package (wireguard-go: go install).
	Install string
}

func (t Tool) pkg() string {
	if t.Package == "" {
		return t.Program
	}
	return t.Package
}

// CongestionControls returns the TCP congestion control algorithms the
// host offers (net.ipv4.tcp_available_congestion_control), after trying
// to load the module (modprobe tcp_NAME) of each algorithm of want it
// lacks, in one round trip.
func (h *Host) CongestionControls(ctx context.Context, want []string) ([]string, error) {
	const avail = "/proc/sys/net/ipv4/tcp_available_congestion_control"
	var b strings.Builder
	b.WriteString("have=$(cat " + avail + ") || exit 1\nfor a in")
	for _, w := range want {
		if w != "" {
			b.WriteString(" " + shellQuote(w))
		}
	}
	b.WriteString(`; do case " $have " in *" $a "*) ;; *) modprobe "tcp_$a" >/dev/null 2>&1 ;; esac; done` + "\ncat " + avail)
	out, _, err := h.run(ctx, []string{"cat", avail}, wrapScript(b.String()), nil)
	if err != nil {
		return nil, fmt.Errorf("remotehost: host %s: read the congestion control algorithms: %w", h.cfg.Name, err)
	}
	return strings.Fields(string(out)), nil
}

// MissingTools returns the tools the host lacks (`command -v` finds no
// such program in the login PATH), checked in one round trip.
func (h *Host) MissingTools(ctx context.Context, tools []Tool) ([]Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("for p in")
	for _, t := range tools {
		if t.Program == "" || strings.ContainsAny(t.Program, "\n\x00") {
			return nil, fmt.Errorf("remotehost: host %s: tool %q: give a program name", h.cfg.Name, t.Program)
		}
		b.WriteString(" " + shellQuote(t.Program))
	}
	b.WriteString(`; do command -v "$p" >/dev/null 2>&1 || printf '%s\n' "$p"; done`)
	out, _, err := h.run(ctx, []string{"command", "-v", "..."}, wrapScript(b.String()), nil)
	if err != nil {
		return nil, fmt.Errorf("remotehost: host %s: look for tools: %w", h.cfg.Name, err)
	}
	missing := map[string]bool{}
	for _, l := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		missing[l] = true
	}
	var lack []Tool
	for _, t := range tools {
		if missing[t.Program] {
			lack = append(lack, t)
		}
	}
	return lack, nil
}

// MissingReport words what host lacks and the lines that install it:
// "host NAME lacks iperf3, ethtool: apt-get install -y
// --no-install-recommends iperf3 ethtool", then "; " and the Install
// command of each tool that has its own. It is "" when nothing is
// missing.
func MissingReport(host string, missing []Tool) string {
	if len(missing) == 0 {
		return ""
	}
	var progs, pkgs, cmds []string
	seen := map[string]bool{}
	for _, t := range missing {
		progs = append(progs, t.Program)
		switch {
		case t.Install != "":
			if !seen["install "+t.Install] {
				seen["install "+t.Install] = true
				cmds = append(cmds, t.Install)
			}
		case !seen[t.pkg()]:
			seen[t.pkg()] = true
			pkgs = append(pkgs, t.pkg())
		}
	}
	if len(pkgs) > 0 {
		cmds = append([]string{"apt-get install -y --no-install-recommends " + strings.Join(pkgs, " ")}, cmds...)
	}
	return fmt.Sprintf("host %s lacks %s: %s", host, strings.Join(progs, ", "), strings.Join(cmds, "; "))
}
