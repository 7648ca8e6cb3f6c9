#!/usr/bin/env bash
# make test's go test -exec wrapper (scripts/test.sh): go test runs at
# nice 5, with the compiles of every test binary and every test binary
# but internal/method/registry's, which holds TestKernelLab, the floor
# of make test, and internal/cli's, whose vm-testbed tests boot emulated
# guests of their own (at nice 5 nebula's and tailscale's starts in them
# outlasted their bounds): those two run back at the niceness make test
# started with (root may lower a niceness). Its software-emulated guest is
# CPU-bound and competes with the other packages' tests and their
# compiles for the two cores; at equal niceness the guest took twice as
# long beside them as alone (docs/development.md, "Where the time goes").
# The other packages wait on load tools, daemons and timers more than on
# the CPU and finish before the guest either way.
case "$(basename "$1")" in
registry.test | cli.test)
	if [ "$(id -u)" = 0 ]; then
		exec nice -n -5 "$@"
	fi
	exec "$@"
	;;
*) exec "$@" ;;
esac
