package method

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"

	"github.com/tunbench/tunbench/internal/testbed"
)

// ProgramVersion is how a method names the version of the program it
// runs, the start of its Implementation: the command that prints the
// version and how its output becomes the name ("Version: 1.11.1" from
// "nebula --version" becomes "nebula 1.11.1"). Local asks this machine,
// for descriptions (tunbench methods); On asks an endpoint's host, for
// what a cell records (HostImplementer). Each asks once: Local once per
// process, On once per host. Declare one *ProgramVersion per program at
// package level; it is safe for concurrent use.
type ProgramVersion struct {
	// Program is the program to run, by name or path.
	Program string
	// Args are its arguments; nil means "--version".
	Args []string
	// Name names the program in the answers that carry no version,
	// "Name (not installed)" and "Name (version unknown)"; empty means
	// Program.
	Name string
	// Parse turns the program's output (stdout and stderr together: some
	// programs print their version on stderr, some print it and exit 1)
	// into the version's name, or "" when the output names none. Nil
	// means FirstLine.
	Parse func(out []byte) string

	localOnce sync.Once
	local     string
	hosts     sync.Map // host name -> string
}

// Local is the version of the program installed on this machine.
func (v *ProgramVersion) Local() string {
	v.localOnce.Do(func() {
		path, err := exec.LookPath(v.Program)
		if err != nil {
			v.local = v.name() + " (not installed)"
			return
		}
		out, err := exec.Command(path, v.args()...).CombinedOutput()
		v.local = v.answer(out, err)
	})
	return v.local
}

// On is the version of the program on ep's host (this machine for a
// local endpoint).
func (v *ProgramVersion) On(ctx context.Context, ep *testbed.Endpoint) string {
	if s, ok := v.hosts.Load(ep.Host); ok {
		return s.(string)
	}
	out, err := ep.Run(ctx, append([]string{v.Program}, v.args()...)...)
	var s string
	if err != nil && len(out) == 0 && (errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "executable file not found")) {
		s = v.name() + " (not installed)"
	} else {
		s = v.answer(out, err)
	}
	v.hosts.Store(ep.Host, s)
	return s
}

// answer is the name of the version the program printed: out and err are
// what running it gave.
func (v *ProgramVersion) answer(out []byte, err error) string {
	if err != nil && len(out) == 0 {
		return v.name() + " (version unknown)"
	}
	parse := v.Parse
	if parse == nil {
		parse = FirstLine
	}
	if s := parse(out); s != "" {
		return s
	}
	return v.name() + " (version unknown)"
}

func (v *ProgramVersion) name() string {
	if v.Name != "" {
		return v.Name
	}
	return v.Program
}

func (v *ProgramVersion) args() []string {
	if v.Args == nil {
		return []string{"--version"}
	}
	return v.Args
}

// FirstLine is the first line of out, without surrounding space, skipping
// leading blank lines: "wireguard-go v0.0.20250522" of wireguard-go's
// five lines.
func FirstLine(out []byte) string {
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(first)
}
