package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/testbed"
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
	return &cobra.Command{
		Use:    "agent",
		Short:  "Serve a controlling tunbench on standard input and output (started over SSH by the ssh testbed)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := testbed.ServeAgent(cmd.Context(), os.Stdin, os.Stdout, BuildID()); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			return nil
		},
	}
}
