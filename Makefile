# The two commands README.md gives for a fresh machine:
#   make run    installs what is missing, builds, runs the default benchmark
#   make test   installs what is missing, lints, runs every test
GO ?= go
BIN := bin/tunbench

.PHONY: run test build lint unit bench clean

build:
	$(GO) build -o $(BIN) ./cmd/tunbench

run:
	./scripts/install.sh run
	$(MAKE) build
	./$(BIN) run

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(shell $(GO) env GOPATH)/bin/staticcheck ./...

test:
	./scripts/install.sh test
	$(MAKE) lint
	$(GO) test -count=1 -timeout 60m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x ./internal/...

clean:
	rm -rf bin
