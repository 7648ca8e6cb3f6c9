package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/testbed/agent"
)

// BuildID identifies this exact binary: the version and the first bytes
// of the executable's SHA-256. The controller and its agents must share
// it, so that a plan's ops mean the same code on every host.
func BuildID() string {
	buildIDOnce.Do(func() {
		buildID = Version()
		exe, err := os.Executable()
		if err != nil {
			return
		}
		f, err := os.Open(exe)
		if err != nil {
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			buildID += "+" + hex.EncodeToString(h.Sum(nil))[:12]
		}
	})
	return buildID
}

var (
	buildIDOnce sync.Once
	buildID     string
)

func newAgentCmd() *cobra.Command {
	var detached bool
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Serve a controlling tunbench on standard input and output (started over SSH by the ssh testbed)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !detached {
				return runDetached()
			}
			if err := agent.ServeAgent(cmd.Context(), os.Stdin, os.Stdout, BuildID()); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&detached, "detached", false, "serve in this process (the agent's own session, started by tunbench agent)")
	_ = cmd.Flags().MarkHidden("detached")
	return cmd
}

// runDetached serves the controller from a child in a session and
// process group of its own, sharing this process's standard input and
// output, and waits for it. sshd's session is this process: whatever
// ends the session's process group (SIGHUP, a kill of the group) leaves
// the agent serving, so that once its input ends it still puts the host
// back from its journal. SIGTERM and SIGINT are passed on (the agent
// then cleans up and exits), and this process ends with the agent's
// status.
func runDetached() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("agent: find this tunbench: %w", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	c := exec.Command(exe, "agent", "--detached")
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return fmt.Errorf("agent: start: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				os.Exit(max(ee.ExitCode(), 1))
			}
			return err
		case sig := <-sigs:
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				_ = c.Process.Signal(sig)
			}
		}
	}
}
