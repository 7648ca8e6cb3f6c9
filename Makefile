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
# Four test packages run at once (-p 4): most wait on load tools, daemons
# and the kernel lab rather than on the CPU. go test starts packages in
# the order they are named, so the two longest (internal/method/registry
# with TestKernelLab, internal/cli) are named first: last in ./...'s
# order, the kernel lab booted minutes after the tests started and was
# the last to end. Beside the tests, niced so
# that the tests keep the CPU they ask for, run the fresh-machine guard
# (scripts/fresh-check.sh: what the repository pins can be fetched) and
# every fuzz target (30 s each, scripts/fuzz.sh); their reports follow
# the tests', and make test fails when any of the three fails, saying
# which.
TEST_PKGS := ./internal/method/registry ./internal/cli ./...

test:
	./scripts/install.sh test
	./scripts/k8s-binaries.sh >/dev/null
	$(MAKE) lint
	@freshlog=$$(mktemp); fuzzlog=$$(mktemp); \
	echo "nice -n 10 ./scripts/fresh-check.sh (beside the tests; its report follows theirs)"; \
	nice -n 10 ./scripts/fresh-check.sh >"$$freshlog" 2>&1 & freshpid=$$!; \
	echo "FUZZTIME=30s nice -n 10 ./scripts/fuzz.sh (beside the tests; its report follows theirs)"; \
	FUZZTIME=30s nice -n 10 ./scripts/fuzz.sh >"$$fuzzlog" 2>&1 & fuzzpid=$$!; \
	echo "bash -o pipefail -c 'TUNBENCH_STRICT=1 $(GO) test -json -count=1 -p 4 -timeout 60m $(TEST_PKGS) 2>&1 | $(GO) run ./scripts/skips'"; \
	bash -o pipefail -c 'TUNBENCH_STRICT=1 $(GO) test -json -count=1 -p 4 -timeout 60m $(TEST_PKGS) 2>&1 | $(GO) run ./scripts/skips'; tests=$$?; \
	wait $$freshpid; fresh=$$?; cat "$$freshlog"; rm -f "$$freshlog"; \
	wait $$fuzzpid; fuzz=$$?; cat "$$fuzzlog"; rm -f "$$fuzzlog"; \
	if [ $$tests -ne 0 ]; then echo "make test: the tests failed (exit status $$tests)"; fi; \
	if [ $$fresh -ne 0 ]; then echo "make test: the fresh-machine guard failed (exit status $$fresh)"; fi; \
	if [ $$fuzz -ne 0 ]; then echo "make test: fuzzing failed (exit status $$fuzz)"; fi; \
	[ $$tests -eq 0 ] && [ $$fresh -eq 0 ] && [ $$fuzz -eq 0 ]

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
