package sshtunnel_test

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/sshtunnel"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestPlans records what ssh-tunnel does to both hosts, for each family
// (testdata/ssh-tunnel-FAMILY.golden, -update rewrites them): the files
// it writes (keys 0600, never their contents), sshd's configuration check
// and start on b, ssh -w on a, the rename of OpenSSH's tunN to the run's
// name with its MTU and address, the ping through, and the teardown. The
// daemons are not run: the test answers their commands (ssh's tunN
// appear on both sides when it starts) and the method's ops.
func TestPlans(t *testing.T) {
	t.Parallel()
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			t.Parallel()
			m := sshtunnel.NewWithUnits(100, 200)
			rec := methodtest.RecordEnv(m, family, map[string]string{"cipher": sshtunnel.AES256GCM, "port": "2222"})
			for _, r := range []*testbedtest.Recorder{rec.A, rec.B} {
				for pid := 1000; pid < 1020; pid++ {
					r.SetFile(fmt.Sprintf("/proc/%d/net/tcp", pid), []byte("sl local rem st tx rx tr tm retr uid timeout inode\n"+
						"0: 0200:08AE 0000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 4242 1\n"))
					r.SetFile(fmt.Sprintf("/proc/%d/net/tcp6", pid), []byte("sl local rem st\n"))
				}
				// sshd's listening socket (inode 4242 above) is its own.
				testbedtest.AnswerOp(r, "proc.sockets", func(pid int) (string, []string, error) { return "", []string{"4242"}, nil })
				testbedtest.AnswerOp(r, "ssh-tunnel.kill", func(dir string) (string, []int, error) {
					return "kill what the pid files in " + dir + " name", nil, nil
				})
			}
			testbedtest.AnswerOp(rec.B, "ssh-tunnel.prepare", func(dir string) (string, string, error) {
				return "", "/usr/sbin/sshd", nil
			})
			testbedtest.AnswerOp(rec.B, "ssh-tunnel.connection", func(pid int) (string, sshtunnel.Connection, error) {
				return "", sshtunnel.Connection{PID: pid + 1}, nil
			})
			rename := func(r *testbedtest.Recorder, argv []string) testbedtest.Answer {
				// ip link set dev tunN name NEW
				r.Forget(argv[4])
				if err := r.Know(argv[6], "tun"); err != nil {
					return testbedtest.Answer{Err: err}
				}
				return testbedtest.Answer{}
			}
			version := testbedtest.Answer{Output: "OpenSSH_9.2p1 Debian-2+deb12u10, OpenSSL 3.0.19 27 Jan 2026\n"}
			rec.A.AnswerCommands(func(argv []string) testbedtest.Answer {
				switch {
				case slices.Equal(argv, []string{"ssh", "-V"}):
					return version
				case argv[0] == "ssh":
					// OpenSSH creates both tun devices once connected;
					// they go with the connection.
					for _, k := range []struct {
						r   *testbedtest.Recorder
						dev string
					}{{rec.A, "tun100"}, {rec.B, "tun200"}} {
						if err := k.r.Know(k.dev, "tun"); err != nil {
							return testbedtest.Answer{Err: err}
						}
					}
					return testbedtest.Answer{Runs: true, OnStop: func() {
						for _, k := range []struct {
							r    *testbedtest.Recorder
							devs []string
						}{{rec.A, []string{"tun100", methodtest.RecordPrefix + "-ssha"}}, {rec.B, []string{"tun200", methodtest.RecordPrefix + "-sshb"}}} {
							for _, d := range k.devs {
								k.r.Forget(d)
							}
						}
					}}
				case len(argv) == 7 && argv[0] == "ip" && argv[5] == "name":
					return rename(rec.A, argv)
				case argv[0] == "ping":
					return testbedtest.Answer{}
				}
				return testbedtest.Answer{Err: fmt.Errorf("unexpected command %q", argv)}
			})
			rec.B.AnswerCommands(func(argv []string) testbedtest.Answer {
				switch {
				case slices.Equal(argv, []string{"ssh", "-V"}):
					return version
				case argv[0] == "/usr/sbin/sshd" && argv[1] == "-t":
					return testbedtest.Answer{}
				case argv[0] == "/usr/sbin/sshd":
					return testbedtest.Answer{Runs: true}
				case len(argv) == 7 && argv[0] == "ip" && argv[5] == "name":
					return rename(rec.B, argv)
				}
				return testbedtest.Answer{Err: fmt.Errorf("unexpected command %q", argv)}
			})
			lines := methodtest.Record(t, m, rec)
			for _, l := range lines {
				if strings.Contains(l, "PRIVATE KEY") {
					t.Fatalf("key material in a recorded line: %s", l)
				}
			}
			testbedtest.Golden(t, "ssh-tunnel-"+family, lines, *update)
		})
	}
}
