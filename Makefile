# The README's commands. `make test` is the test command CI runs.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GOBIN     ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)

# The pinned staticcheck (honnef.co/go/tools); `make staticcheck` installs it
# (through the Go module proxy) when that version is not in GOBIN.
STATICCHECK_VERSION := v0.8.2

# Release and chart tools, built from the Go module proxy at pinned versions:
# goreleaser (make release-snapshot) and helm (the deploy tests of the chart).
GORELEASER_VERSION := v2.15.1
HELM_VERSION       := v3.22.0

.PHONY: all build test test-deps fmt-check vet staticcheck staticcheck-install bench generate docs image
.PHONY: release-snapshot goreleaser-install helm-install cross-build

all: build

# The same static binary the Dockerfile builds, without Docker.
build:
	VERSION=$(VERSION) REVISION=$(REVISION) GO=$(GO) ./scripts/build.sh

# Regenerates deploy/kubernetes/prometheusrule.yaml from alerts/, and the Helm
# chart's files/ (its PrometheusRule and the dashboards) from alerts/ and dashboards/.
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

# Release archives for every target of .goreleaser.yaml into dist/, with
# sha256sums.txt, from the checked-out commit (no tag needed, nothing published).
release-snapshot:
	@$(GO) version -m $(GOBIN)/goreleaser 2>/dev/null | grep -qE '^\s+mod\s+github.com/goreleaser/goreleaser/v2\s+$(GORELEASER_VERSION)\s' || \
		$(MAKE) --no-print-directory goreleaser-install
	$(GOBIN)/goreleaser check
	@# goreleaser reads the commit only when git names a remote; a clone without
	@# one (a worktree of a local repository) names itself for this run.
	$(if $(shell git remote 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=$(CURDIR)) \
		$(GOBIN)/goreleaser release --snapshot --clean

goreleaser-install:
	$(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

# Installs the pinned helm unless GOBIN holds it already (the chart tests
# need it; bash .ci/run calls this).
helm-install:
	@$(GO) version -m $(GOBIN)/helm 2>/dev/null | grep -qE '^\s+mod\s+helm.sh/helm/v3\s+$(HELM_VERSION)\s' || \
		$(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# Cross-compiles every release target with plain go build (what CI checks).
cross-build:
	$(GO) test ./deploy -run TestCrossCompileReleaseTargets -count=1 -v
