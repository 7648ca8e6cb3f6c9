# The two commands README.md gives for a fresh machine:
#   make run    installs what is missing, builds, runs the default benchmark
#   make test   installs what is missing, lints, runs every test
# Both run as root.
GO ?= go
BIN := bin/tunbench

.PHONY: run test build lint fresh-check fuzz chaos unit bench clean

build:
	$(GO) build -o $(BIN) ./cmd/tunbench

run:
	./scripts/install.sh run
	$(MAKE) build
	./$(BIN) run

# What the repository pins can be fetched on a fresh machine, whatever
# this one has cached or installed (docs/development.md).
fresh-check:
	./scripts/fresh-check.sh

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# The tests run in strict mode (TUNBENCH_STRICT=1: a test that would skip
# for something this target provides fails instead), and scripts/skips
# lists every skipped test at the end and fails on one that
# no expected-skips file names: scripts/expected-skips.txt, and each
# method family's own expected-skips.txt in its folder (docs/development.md).
# scripts/test.sh runs the install step, then the tests, and beside them
# lint, the Kubernetes binaries' build, the fresh-machine guard and every
# fuzz target (30 s each), prints their reports and each phase's time, and
# fails, saying which, when any of them fails.
test:
	GO=$(GO) ./scripts/test.sh

# The chaos suites in full (make test runs 10 of each): 100 SIGKILLs of
# local runs at random moments, each followed by clean, checks and
# --resume (TestChaos), and 100 SIGKILLs of a controller over three ssh
# hosts with host_changes, each followed by clean --testbed ssh and a
# line-by-line comparison of every host with its state before
# (TestChaosSSH), the hosts carrying state of their own (the foreign-state
# fixture, testbedtest.Foreign). KILLS=N changes both. It also runs every
# method over such hosts with every MTU and offload setting
# (TestSSHForeignState -foreign.full; make test runs one setting).
chaos:
	$(GO) test -count=1 -timeout 240m -run 'TestChaos|TestSSHForeignState' -v ./internal/cli -args -chaos.kills=$${KILLS:-100} -chaos.sshkills=$${KILLS:-100} -foreign.full

# Every fuzz target for FUZZTIME each (make fuzz FUZZTIME=10m).
fuzz:
	FUZZTIME=$${FUZZTIME:-30s} ./scripts/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x ./internal/...

clean:
	rm -rf bin
