# The README's commands. `make test` is the test command CI runs.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)

.PHONY: all build test test-deps lint fmt-check vet bench

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bragerone_exporter .

# test-deps installs the real peers some tests talk to (the reference Node.js
# Socket.IO server); promtool and amtool come from Debian (see .ci/run).
test-deps:
	@if [ -f realtime/testdata/nodeserver/package.json ] && [ ! -d realtime/testdata/nodeserver/node_modules ]; then \
		cd realtime/testdata/nodeserver && npm ci --no-audit --no-fund --loglevel=error; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test: test-deps fmt-check vet
	$(GO) test -race -count=1 -timeout 20m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
