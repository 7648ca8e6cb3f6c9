package remotehost

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ErrUnknownHostKey is wrapped by the error of Dial when known_hosts does
// not know the host.
var ErrUnknownHostKey = errors.New("unknown host key")

// ErrHostKeyChanged is wrapped by the error of Dial when the host offers a
// key other than the one known_hosts records for it.
var ErrHostKeyChanged = errors.New("host key changed")

// ErrHostKeyRevoked is wrapped by the error of Dial when known_hosts marks
// the offered key @revoked.
var ErrHostKeyRevoked = errors.New("host key revoked")

// hostKeyChecker verifies host keys against one known_hosts file and keeps
// the error it found, so that Dial can return it unwrapped by the
// handshake's own message.
type hostKeyChecker struct {
	cfg  Config
	path string
	db   ssh.HostKeyCallback
	err  error
}

func newHostKeyChecker(c Config) (*hostKeyChecker, error) {
	path, err := c.knownHostsPath()
	if err != nil {
		return nil, err
	}
	var files []string
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remotehost: host %s: known_hosts: %w", c.Name, err)
	}
	db, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("remotehost: host %s: read known_hosts %s: %w: fix or remove the line it names", c.Name, path, err)
	}
	return &hostKeyChecker{cfg: c, path: path, db: db}, nil
}

// probeKey is never a real host's key: asking the database about it
// returns the keys it knows for a host.
var probeKey = func() ssh.PublicKey {
	k, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public())
	if err != nil {
		panic(err)
	}
	return k
}()

// algorithms returns the host key algorithms to offer so that the server
// picks a key type known_hosts has for it: otherwise a host with keys of
// several types could present one known_hosts lacks and look changed. It
// returns nil (the library's default order) when no key is known.
func (h *hostKeyChecker) algorithms(remote net.Addr) []string {
	var ke *knownhosts.KeyError
	if err := h.db(h.cfg.hostPort(), remote, probeKey); !errors.As(err, &ke) {
		return nil
	}
	var algs []string
	seen := map[string]bool{}
	add := func(a ...string) {
		for _, x := range a {
			if !seen[x] {
				seen[x] = true
				algs = append(algs, x)
			}
		}
	}
	for _, k := range ke.Want {
		switch t := k.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	return algs
}

// check is the ssh.HostKeyCallback.
func (h *hostKeyChecker) check(hostport string, remote net.Addr, key ssh.PublicKey) error {
	err := h.db(hostport, remote, key)
	if err == nil {
		return nil
	}
	c := h.cfg
	fp := ssh.FingerprintSHA256(key)
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &re):
		h.err = fmt.Errorf("remotehost: host %s (%s): %w: it offers %s %s, marked @revoked at %s: a revoked key is never accepted; if the host has a new key, replace the line",
			c.Name, c.hostPort(), ErrHostKeyRevoked, key.Type(), fp, re.Revoked.Filename+":"+fmt.Sprint(re.Revoked.Line))
	case errors.As(err, &ke) && len(ke.Want) == 0:
		h.err = fmt.Errorf("remotehost: host %s (%s): %w %s %s, not in %s: to accept it, check the fingerprint %s against the host's `ssh-keygen -lf %s`, then run `%s`",
			c.Name, c.hostPort(), ErrUnknownHostKey, key.Type(), fp, h.path, fp, hostKeyPub(key), keyscanLine(c, key, h.path))
	case errors.As(err, &ke):
		var known []string
		for _, k := range ke.Want {
			known = append(known, fmt.Sprintf("%s %s at %s:%d", k.Key.Type(), ssh.FingerprintSHA256(k.Key), k.Filename, k.Line))
		}
		h.err = fmt.Errorf("remotehost: host %s (%s): %w: it offers %s %s, known_hosts has %s: if the host was reinstalled, check the fingerprint %s against the host's `ssh-keygen -lf %s`, remove the old key with `ssh-keygen -f %s -R %s` and accept the new one with `%s`; otherwise someone may be intercepting the connection",
			c.Name, c.hostPort(), ErrHostKeyChanged, key.Type(), fp, strings.Join(known, ", "), fp, hostKeyPub(key), shellQuote(h.path), shellQuote(knownhosts.Normalize(c.hostPort())), keyscanLine(c, key, h.path))
	default:
		h.err = fmt.Errorf("remotehost: host %s (%s): check host key against %s: %w", c.Name, c.hostPort(), h.path, err)
	}
	return h.err
}

// keyscanType is ssh-keyscan's -t name of a key type.
func keyscanType(key ssh.PublicKey) string {
	switch t := key.Type(); {
	case t == ssh.KeyAlgoED25519:
		return "ed25519"
	case strings.HasPrefix(t, "ecdsa-"):
		return "ecdsa"
	case t == ssh.KeyAlgoRSA:
		return "rsa"
	default:
		return t
	}
}

// hostKeyPub is the public host key file of key's type on a stock OpenSSH
// server.
func hostKeyPub(key ssh.PublicKey) string {
	return "/etc/ssh/ssh_host_" + keyscanType(key) + "_key.pub"
}

// keyscanLine is the command that appends the host's key of key's type to
// the known_hosts file.
func keyscanLine(c Config, key ssh.PublicKey, path string) string {
	return fmt.Sprintf("ssh-keyscan -p %d -t %s %s >> %s", c.Port, keyscanType(key), shellQuote(c.Addr), shellQuote(path))
}
