package remotehost

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// authMethods returns how to log in to c's host, and a closer for the
// agent connection it may have opened (to call once the handshake is done).
func authMethods(c Config) ([]ssh.AuthMethod, io.Closer, error) {
	if c.IdentityFile != "" {
		s, err := loadSigner(c.IdentityFile)
		if err != nil {
			return nil, nil, fmt.Errorf("remotehost: host %s: identity_file: %w", c.Name, err)
		}
		return []ssh.AuthMethod{ssh.PublicKeys(s)}, nil, nil
	}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return nil, nil, fmt.Errorf("remotehost: host %s: ssh-agent at SSH_AUTH_SOCK=%s: %w: start the agent, or set identity_file", c.Name, sock, err)
		}
		return []ssh.AuthMethod{ssh.PublicKeysCallback(agent.NewClient(conn).Signers)}, conn, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, nil, fmt.Errorf("remotehost: host %s: %w: no identity_file, no SSH_AUTH_SOCK and no home directory: set identity_file", c.Name, errNoIdentity)
	}
	var signers []ssh.Signer
	for _, name := range defaultIdentities {
		p := filepath.Join(home, ".ssh", name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		s, err := loadSigner(p)
		if err != nil {
			return nil, nil, fmt.Errorf("remotehost: host %s: %w", c.Name, err)
		}
		signers = append(signers, s)
	}
	if len(signers) == 0 {
		return nil, nil, fmt.Errorf("remotehost: host %s: %w: identity_file is empty, SSH_AUTH_SOCK is not set and none of ~/.ssh/id_ed25519, id_ecdsa, id_rsa exists: set identity_file or start ssh-agent", c.Name, errNoIdentity)
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, nil, nil
}

// loadSigner reads an unencrypted private key file.
func loadSigner(path string) (ssh.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ssh.ParsePrivateKey(data)
	var pass *ssh.PassphraseMissingError
	if errors.As(err, &pass) {
		return nil, fmt.Errorf("%s is protected by a passphrase: load it into ssh-agent (ssh-add %s) and leave identity_file empty", path, path)
	}
	if err != nil {
		return nil, fmt.Errorf("read private key %s: %w", path, err)
	}
	return s, nil
}
