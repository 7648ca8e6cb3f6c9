// Package pgtest gives tests a real PostgreSQL server of their own: Debian's
// postgresql package's initdb and pg_ctl (/usr/lib/postgresql/*/bin) make a
// cluster in a temporary directory, listening on 127.0.0.1 on a free port
// and on a unix socket in that directory, with trust authentication for
// its one user, tunbench. Nothing on the machine is touched: no system
// cluster, no /var/run/postgresql.
//
// PostgreSQL refuses to run as root, so when the tests run as root the
// cluster belongs to, and runs as, the OS user "postgres" that the Debian
// package creates (else "nobody"); otherwise it runs as the test's user.
//
// One server serves a test process: the first URL call starts it, and Main
// (wrap TestMain's m.Run with it) stops it and removes its directory. Each
// URL call makes a database of its own on it, dropped when the test ends. A
// server left behind by a killed test process is stopped and removed by
// the next process's start.
//
// Without PostgreSQL installed, URL skips the test, or fails it in strict
// mode (make test installs the postgresql package).
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/tunbench/tunbench/internal/testenv"
)

// dirPrefix names the temporary directories of test clusters.
const dirPrefix = "tunbench-pgtest-"

// server is a running test cluster.
type server struct {
	dir  string // temporary directory: data/, the socket, log, owner
	bin  string // the PostgreSQL bin directory
	port int
	cred *syscall.Credential // nil: run as ourselves
}

var (
	mu       sync.Mutex
	srv      *server
	startErr error
	wrapped  atomic.Bool
	dbSeq    atomic.Int64
)

// Main runs the tests and then stops the server they started, if any.
// Use it in TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	wrapped.Store(true)
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if srv != nil {
		srv.stop()
		srv = nil
	}
	return code
}

// Bin returns the bin directory of the newest PostgreSQL installed from
// Debian's packages, or an error saying how to install it.
func Bin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return "", errors.New("no PostgreSQL server installed (/usr/lib/postgresql/*/bin/initdb): apt-get install -y --no-install-recommends postgresql")
	}
	sort.Slice(ok, func(i, j int) bool { return version(ok[i]) > version(ok[j]) })
	return ok[0], nil
}

func version(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

// URL returns the URL of a new, empty database on the test process's
// server, dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	if !wrapped.Load() {
		t.Fatal("pgtest.URL: the package's TestMain must run its tests through pgtest.Main, which stops the server")
	}
	bin, err := Bin()
	if err != nil {
		testenv.SkipMissing(t, "%v", err)
	}
	mu.Lock()
	if srv == nil && startErr == nil {
		srv, startErr = start(bin)
	}
	s, err := srv, startErr
	mu.Unlock()
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := s.exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if err := s.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return s.url(name)
}

func (s *server) url(db string) string {
	return fmt.Sprintf("postgres://tunbench@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// exec runs one statement in the maintenance database.
func (s *server) exec(stmt string) error {
	db, err := sql.Open("pgx", s.url("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// start makes and starts a cluster, after removing those whose test
// process died.
func start(bin string) (*server, error) {
	reapStale(bin)
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, bin: bin, cred: cred}
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "tunbench", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// A free port can be taken between our look and the server's bind:
	// try a few.
	for range 5 {
		if s.port, err = freePort(); err != nil {
			break
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
			s.port, dir)
		var out []byte
		out, err = s.run("pg_ctl", "-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "log"),
			"-o", opts, "-w", "-t", "120", "start")
		if err == nil {
			return s, nil
		}
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		err = fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
		if !strings.Contains(string(log), "already in use") {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// stop stops the server at once and removes its directory.
func (s *server) stop() {
	s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}

// run runs a PostgreSQL program as the cluster's owner.
func (s *server) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, prog), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin", "HOME=" + s.dir}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

// credential is the OS user the cluster runs as: as root, the Debian
// package's "postgres" user, else "nobody"; nil for anyone else.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// reapStale stops and removes clusters whose test process is gone (a
// killed go test).
func reapStale(bin string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue
		}
		cred, _ := credential()
		(&server{dir: d, bin: bin, cred: cred}).stop()
	}
}
