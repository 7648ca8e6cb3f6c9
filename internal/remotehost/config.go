// Package remotehost is a host of a remote testbed reached over a
// Transport. Over SSH (the ssh testbed) it makes one connection per host
// (golang.org/x/crypto/ssh), its host key verified
// against a known_hosts file, kept alive and watched so that a lost host is
// noticed within seconds. Over that connection it runs commands (argv
// quoted for the remote shell), starts long-running ones whose stdin and
// stdout carry the agent's RPC, copies files, installs tunbench itself, and
// reports the programs a host lacks with the line that installs them.
//
// The connection is a Transport: Dial makes the SSH one; NewHost runs the
// same Host over any other channel to a POSIX shell on the host (the
// Kubernetes testbed's pod exec streams, internal/kubehost), with
// everything above unchanged. Keepalives and the host key check are the
// SSH transport's own.
//
// There is no option to skip host key verification: an unknown or changed
// key is an error (ErrUnknownHostKey, ErrHostKeyChanged) that says how to
// check and accept it.
//
// The remote login shell must be POSIX-like (sh, bash, dash, zsh): argv is
// joined with single-quote quoting, which csh and fish do not read the
// same way.
package remotehost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// Config names one host of an ssh testbed and how to log in to it.
type Config struct {
	// Name is how errors and reports call the host (default: Addr).
	Name string
	// Addr is the host's address or DNS name.
	Addr string
	// Port is the SSH port (0: 22).
	Port int
	// User is the login user (empty: root).
	User string
	// IdentityFile is the private key to log in with. Empty: the keys of
	// ssh-agent when SSH_AUTH_SOCK is set, else whichever of
	// ~/.ssh/id_ed25519, id_ecdsa and id_rsa exist.
	IdentityFile string
	// KnownHosts is the known_hosts file host keys are checked against
	// (empty: ~/.ssh/known_hosts). A missing file knows no host.
	KnownHosts string
	// Dial opens the TCP connection (nil: a net.Dialer). Tests use it to
	// connect from inside a network namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// defaultIdentities are tried, in order, when neither IdentityFile nor an
// agent is given (as ssh(1) does).
var defaultIdentities = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// withDefaults returns c with its defaults filled in.
func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = c.Addr
	}
	if c.Port == 0 {
		c.Port = 22
	}
	if c.User == "" {
		c.User = "root"
	}
	return c
}

// Validate checks c without connecting, and names the field at fault and
// the fix.
func (c Config) Validate() error {
	c = c.withDefaults()
	name := c.Name
	if name == "" {
		name = "(unnamed)"
	}
	switch {
	case strings.TrimSpace(c.Addr) == "":
		return fmt.Errorf("remotehost: host %s: addr is empty: give the host's address or DNS name", name)
	case strings.ContainsAny(c.Addr, " \t\n/@"):
		return fmt.Errorf("remotehost: host %s: addr %q is not an address or DNS name: give it without port, user or path (port and user have their own fields)", name, c.Addr)
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("remotehost: host %s: port %d is out of range: give 1-65535, or 0 for 22", name, c.Port)
	case strings.ContainsAny(c.User, " \t\n@:"):
		return fmt.Errorf("remotehost: host %s: user %q is not a login name: give the remote user alone (default root)", name, c.User)
	}
	if c.IdentityFile != "" {
		if _, err := os.Stat(c.IdentityFile); err != nil {
			return fmt.Errorf("remotehost: host %s: identity_file: %w: give an existing private key, or leave it empty to use ssh-agent or ~/.ssh/id_*", name, err)
		}
	}
	if c.KnownHosts != "" {
		if st, err := os.Stat(c.KnownHosts); err == nil && st.IsDir() {
			return fmt.Errorf("remotehost: host %s: known_hosts %s is a directory: give a known_hosts file", name, c.KnownHosts)
		}
	}
	return nil
}

// hostPort is the address Dial connects to, "addr:port".
func (c Config) hostPort() string { return net.JoinHostPort(c.Addr, fmt.Sprint(c.Port)) }

// knownHostsPath is the known_hosts file of c, absolute when it can be.
func (c Config) knownHostsPath() (string, error) {
	p := c.KnownHosts
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("remotehost: host %s: known_hosts: no home directory (%w): set known_hosts", c.Name, err)
		}
		p = filepath.Join(home, ".ssh", "known_hosts")
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p, nil
}

var errNoIdentity = errors.New("no identity")

// ExpandHome returns p with a leading "~/" replaced by the home directory
// (as a shell would for the paths scenarios name: identity, known_hosts,
// kubeconfig).
func ExpandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return home + "/" + rest
		}
	}
	return p
}
