# MercadoFresco Integration: the two commands of the README live here.
#   make        install everything and synthesise every environment into cdk.out
#   make test   install everything, start the local services, run every test
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# The pinned Node 22 (jsii, the CDK CLI) and the npm tools come first.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
GO ?= go
ENV ?= dev
SUDO = $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: all install synth cost test test-cdk test-race test-e2e test-models verify chaos e2e review vet fmt-check tree-check snapshots diff deploy services bench measure clean

all: synth

## install: npm packages (Node 22, CDK CLI, dynalite, aws-local-stepfunctions, asl-validator) and Go modules
# The stamp holds the hash of package.json and package-lock.json, not a time:
# a fresh checkout (or a git worktree) has new file times but the same
# content, and must not reinstall.
install:
	@want=$$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1); \
	if [ "$$(cat node_modules/.install-stamp 2>/dev/null)" != "$$want" ]; then \
	  npm ci --no-audit --no-fund --loglevel=error && echo "$$want" > node_modules/.install-stamp; \
	fi
	$(GO) mod download
	cd bench && $(GO) mod download
	@command -v spin >/dev/null || { echo "installing spin (the models' checker, Debian package spin)"; \
	  $(SUDO) apt-get install -y spin || { $(SUDO) apt-get update && $(SUDO) apt-get install -y spin; }; }

## synth: every environment (dev, staging, prod) into cdk.out; no AWS credentials needed
synth: install
	cdk synth --quiet
	@ls cdk.out/*.template.json

## cost: the monthly cost of ENV from its synthesized templates, the usage model and the dated price table (make cost ENV=prod); synthesises ENV first when cdk.out lacks it or the code changed since
cost: install
	@oldest=$$(ls -tr cdk.out/*-$(ENV).template.json 2>/dev/null | head -1 || true); \
	if [ -z "$$oldest" ] || [ -n "$$(find app.go cdk.json go.mod config constructs stacks lambdas -type f -newer "$$oldest" -print -quit)" ]; then \
	  echo "synthesising $(ENV) into cdk.out" >&2; cdk synth --quiet -c env=$(ENV) >/dev/null; \
	fi
	@$(GO) run ./cmd/mf cost -e $(ENV)

# The Go libraries and tools run under the race detector. The packages that
# link the CDK (constructs, stacks, the app, and the commands and test
# helpers built on them: jsii drives a Node process, nothing of ours is
# concurrent there, and the race runtime slows jsii several-fold) run
# without it, and so does the end-to-end run (internal/e2e): its parts are
# race-tested in their own packages, and it mostly waits on scaled timeouts
# (a lane of its own). One `go list` splits the tree by whether a package
# links aws-cdk-lib.
CDK_MODULE = github.com/aws/aws-cdk-go/awscdk/v2
LINKS_CDK = $(GO) list -f '{{.ImportPath}}{{range .Deps}}{{if eq . "$(CDK_MODULE)"}} cdk{{end}}{{end}}' ./...
# The end-to-end run and the models have lanes of their own, and ./test
# leads the CDK lane: neither the race lane nor the CDK lane lists them
# again (internal/e2e links aws-cdk-lib through config, and ran twice).
OWN_LANES = /\/internal\/e2e$$|\/integration\/test$$|\/integration\/models$$/
RACE_PKGS = $$($(LINKS_CDK) | awk '$$2 != "cdk" && $$1 !~ $(OWN_LANES) {print $$1}')
CDK_PKGS = $$($(LINKS_CDK) | awk '$$2 == "cdk" && $$1 !~ $(OWN_LANES) {print $$1}')

# Test binaries are linked without symbol tables (a failing test's stack
# trace does not need them) and kept in .cache/testbin between runs
# (scripts/gotest.sh): go test would link each one again on every run, a
# large part of a package's start (docs/design.md#performance). Every run
# executes every test (-test.count=1).
BUILDFLAGS = -ldflags='-s -w'
GOTEST = GO=$(GO) bash scripts/gotest.sh

## test: everything CI runs (every test runs each time: tests against PostgreSQL, dynalite and the CLI are never answered from a cache)
# Four lanes run side by side (each buffered, then printed whole): the CDK
# packages keep both cores busy (Go and jsii's Node), the race lane waits on
# PostgreSQL, dynalite and child processes much of the time, the
# end-to-end run mostly waits on its scaled timeouts, so it starts at once
# instead of after the CDK packages, and the models' lane is a few seconds
# of Spin once its verifiers are cached.
test: install services fmt-check tree-check vet
	$(MAKE) --no-print-directory -j4 --output-sync=target test-race test-cdk test-e2e test-models

# A race-enabled binary sleeps 1 s before it exits (GORACE atexit_sleep_ms,
# default 1000), about 40 s of this lane's 80 binaries two at a time.
RACE_ENV = GORACE='atexit_sleep_ms=0 $(GORACE)'

# The bench module's tests (bench/cmd/retry-storm, bench/cmd/friday, bench/breaker) run in this lane too.
test-race:
	$(RACE_ENV) $(GOTEST) race -race $(BUILDFLAGS) -- $(RACE_PKGS) -- -test.timeout=15m
	cd bench && $(RACE_ENV) TESTBIN_DIR=$(CURDIR)/.cache/testbin GO=$(GO) bash ../scripts/gotest.sh bench -race $(BUILDFLAGS) -- ./... -- -test.timeout=15m

# The app-level package (./test, the longest) is listed first so that it
# starts first. The CDK's CloudFormation validator is off for these binaries
# (about 1.5 s of each one's start and of every synthesis in it): the
# app-level synthesis of ./test registers it itself and checks every
# environment; its CLI synthesis (dev) passes --no-validation
# (docs/design.md#performance).
test-cdk:
	CDK_VALIDATION=false $(GOTEST) cdk $(BUILDFLAGS) -- ./test $(CDK_PKGS) -- -test.timeout=15m

# The short form of the end-to-end run (100 orders); `make e2e` is the full one.
test-e2e:
	$(GOTEST) e2e $(BUILDFLAGS) -- ./internal/e2e -- -test.timeout=15m

# The Promela models (models/) at reduced bounds, their mutants and their
# drift test; only this lane runs ./models (RACE_PKGS leaves it out).
test-models:
	$(GOTEST) models $(BUILDFLAGS) -- ./models -- -test.timeout=10m

## verify: every Promela model at its full bounds, the mutants and the drift test; prints what each search explored (docs/models.md)
verify: install
	$(GO) test -count=1 -timeout 60m -v -run 'TestModels|TestMutants' ./models -args -models.full \
	  | grep -E '^(--- |ok|FAIL|PASS|\|)|_test.go:'

## e2e: the whole order flow under chaos with 1,000 orders (`make test` runs it with 100): replays the seed docs/e2e-report.md records and rewrites it; MF_SEED=new (or =<seed>) runs another seed into cdk.out/e2e-report.md (E2E_REPORT=<file> chooses)
E2E_SEED = $(shell sed -n 's/^.*Seed \([0-9][0-9]*\):.*$$/\1/p' docs/e2e-report.md | head -n 1)
e2e: install services
	@seed="$(MF_SEED)"; report="$(E2E_REPORT)"; \
	if [ -z "$$seed" ]; then seed="$(E2E_SEED)"; report=$${report:-$(CURDIR)/docs/e2e-report.md}; fi; \
	if [ "$$seed" = new ]; then seed=$$(date +%s%N); fi; \
	report=$${report:-$(CURDIR)/cdk.out/e2e-report.md}; mkdir -p "$$(dirname "$$report")"; \
	echo "e2e: seed $$seed, report $$report"; \
	MF_SEED=$$seed $(GO) test -count=1 -timeout 20m -run 'TestOrderFlow$$' -v ./internal/e2e -args -e2e.full -e2e.report="$$report" \
	  | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|seed|e2e_test|promises'

## e2e-friday: ten times Friday end to end (9,000 orders in 4 bursts over a simulated hour, cobro's reserved concurrency as deployed); report in cdk.out/e2e-friday.md (MF_SEED=<seed> replays one); make measure times it
e2e-friday: install services
	@mkdir -p cdk.out; $(GO) test -count=1 -timeout 30m -run 'TestOrderFlow$$' -v ./internal/e2e -args -e2e.friday -e2e.report=$(CURDIR)/cdk.out/e2e-friday.md \
	  | grep -E '^(=== RUN|--- |ok|FAIL|PASS|panic|fatal error)|seed|e2e_test|promises|\.go:[0-9]+: e2e:'
	@sed -n '/^## Backpressure/,/^## Dead/p' cdk.out/e2e-friday.md | head -n -1

## chaos: the long chaos runs at full size (seed printed; MF_SEED=<seed> replays one)
chaos: install services
	MF_CHAOS=1 $(RACE_ENV) $(GO) test -race -count=1 -timeout 60m -run 'Chaos' -v ./lambdas/outbox/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|seed|orders|kills'

## review: cdk diff of every stack of ENV against the committed snapshots, no AWS credentials (make review ENV=prod)
review: install
	$(GO) run ./cmd/mf review -e $(ENV)

## tree-check: nothing built or installed is tracked (no node_modules, no file over 2 MB)
tree-check:
	@bad=$$(git ls-files -s | awk '$$4 == "node_modules" || $$4 ~ /^node_modules\// {print $$4}'); \
	big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 2000000 {print $$2}'); \
	if [ -n "$$bad$$big" ]; then echo "tracked but must not be: $$bad $$big"; exit 1; fi

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## services: PostgreSQL and Redis on 127.0.0.1 (started if down)
services:
	bash scripts/services.sh

## snapshots: rewrite the golden templates in test/testdata/snapshots (review the diff!)
snapshots: install
	UPDATE_SNAPSHOTS=1 $(GO) test ./test -run 'TestSnapshots' -count=1

## diff / deploy one environment: make diff ENV=prod
diff: install
	cdk diff -c env=$(ENV)

deploy: install
	cdk deploy -c env=$(ENV) --all --require-approval broadening

## bench: the Go benchmarks of the Lambda libraries (the bench module's tools run with go run and its breaker comparison with go test -bench, see docs/; their tests run in make test)
bench: install services
	$(GO) test -run '^$$' -bench . -benchmem ./lambdas/...

## measure: wall times of the two commands, cold and warm (docs/measurements.md)
measure: install services
	bash scripts/measure.sh

clean:
	rm -rf cdk.out .cache/testbin .cache/spin
