#!/usr/bin/env bash
# make test's go test -exec wrapper (scripts/test.sh): every test binary
# runs at nice 5 but internal/method/registry's, which holds TestKernelLab,
# the floor of make test. Its software-emulated guest is CPU-bound and
# competes with the other packages' tests for the two cores; at equal
# niceness the guest took twice as long beside them as alone
# (docs/development.md, "Where the time goes"). The other packages wait
# on load tools, daemons and timers more than on the CPU and finish
# before the guest either way.
case "$(basename "$1")" in
registry.test) exec "$@" ;;
*) exec nice -n 5 "$@" ;;
esac
