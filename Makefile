# The README's commands. `make test` is the test command CI runs.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GOBIN     ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)

# The pinned staticcheck (honnef.co/go/tools); `make staticcheck` installs it
# (through the Go module proxy) when that version is not in GOBIN.
STATICCHECK_VERSION := v0.8.2

.PHONY: all build test test-deps fmt-check vet staticcheck staticcheck-install bench generate docs image

all: build

# The same static binary the Dockerfile builds, without Docker.
build:
	VERSION=$(VERSION) REVISION=$(REVISION) GO=$(GO) ./scripts/build.sh

# Regenerates deploy/kubernetes/prometheusrule.yaml from alerts/.
generate:
	$(GO) generate ./deploy

# Regenerates the README's flag reference from --help.
docs:
	$(GO) test ./deploy -run TestREADMEFlagReference -update -count=1

image:
	docker build -t bragerone_exporter --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		--build-arg BRANCH="$$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)" --build-arg BUILD_DATE="$$(date -u +%Y%m%d-%H:%M:%S)" .

# test-deps installs the real peers some tests talk to (the reference Node.js
# Socket.IO server); promtool and amtool come from Debian (see .ci/run).
test-deps:
	@if [ -f realtime/testdata/nodeserver/package.json ] && [ ! -d realtime/testdata/nodeserver/node_modules ]; then \
		cd realtime/testdata/nodeserver && npm ci --no-audit --no-fund --loglevel=error; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck-install:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# Checks with the pinned version only: another installed version is replaced.
staticcheck:
	@$(GOBIN)/staticcheck -version 2>/dev/null | grep -qF '($(STATICCHECK_VERSION:v%=%))' || \
		$(MAKE) --no-print-directory staticcheck-install
	$(GOBIN)/staticcheck ./...

test: test-deps fmt-check vet staticcheck
	@# Benchmarks are not measured here, but each must still run once.
	@out=$$($(GO) test -run='^$$' -bench=. -benchtime=1x ./... 2>&1) || { echo "$$out"; exit 1; }; echo "benchmarks: each ran once"
	$(GO) test -race -count=1 -timeout 20m ./...

# Every performance figure of BENCHMARKS.md with its same-run baseline.
bench:
	scripts/bench.sh
