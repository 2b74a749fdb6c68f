# lockctl: `make test` runs the whole suite on a fresh Debian/Ubuntu machine.
GO ?= go

.PHONY: test build install deb release release-check completions man bench bench-peers bench-sitting lint fuzz chaos reliability

# CGO_ENABLED=0: one static binary, no libc to load at start-up.
# -buildvcs=auto: a build from a checkout records the commit and its date
# (lockctl version shows them), even where GOFLAGS turns stamping off.
# Go does not stamp a git worktree (its .git is a file): the -X values
# name the commit then.
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
GIT_TIME := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
# VERSION, when set, is what `lockctl version` prints (make deb sets it).
LDFLAGS := -X github.com/lockctl/lockctl/cmd.Commit=$(GIT_COMMIT) -X github.com/lockctl/lockctl/cmd.CommitTime=$(GIT_TIME)
ifneq ($(VERSION),)
LDFLAGS += -X github.com/lockctl/lockctl/cmd.Version=$(VERSION)
endif
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -ldflags "$(LDFLAGS)" -o bin/lockctl .

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, one man page per
# command and the bash, zsh and fish completions, each where its tool looks
# (directories that do not exist yet, such as man1/ on a fresh Debian, are
# created). A system-wide install needs root: `make build && sudo make install`
# (install builds bin/lockctl only when it is missing, since sudo's PATH
# seldom has Go).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# BIN: the binary to install (make deb DEB_BIN=... installs a cross-built one).
BIN ?= bin/lockctl
install:
	@test -x $(BIN) || $(MAKE) build
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(BASHCOMPDIR)" "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	install -m 0755 $(BIN) "$(DESTDIR)$(BINDIR)/lockctl"
	install -m 0644 man/*.1 "$(DESTDIR)$(MANDIR)/man1/"
	install -m 0644 completions/lockctl.bash "$(DESTDIR)$(BASHCOMPDIR)/lockctl"
	install -m 0644 completions/_lockctl "$(DESTDIR)$(ZSHCOMPDIR)/_lockctl"
	install -m 0644 completions/lockctl.fish "$(DESTDIR)$(FISHCOMPDIR)/lockctl.fish"

# make deb: dist/lockctl_<version>_<arch>.deb, laid out as Debian does
# (/usr/bin, gzipped man pages, completions in the vendor directories,
# /usr/share/doc/lockctl/copyright), packed by nfpm at a pinned version.
# scripts/deb-version.sh names the version. DEB_BIN packs a binary built
# elsewhere (make release cross-builds one per DEB_ARCH) instead of building.
NFPM := $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
DEB_VERSION ?= $(shell ./scripts/deb-version.sh)
DEB_ARCH ?= $(shell $(GO) env GOARCH)
DEB_ROOT := dist/deb-root
DEB_BIN ?=
deb:
	rm -rf $(DEB_ROOT) && mkdir -p dist
ifeq ($(DEB_BIN),)
	$(MAKE) build VERSION=v$(DEB_VERSION)
	$(MAKE) install DESTDIR=$(CURDIR)/$(DEB_ROOT) PREFIX=/usr ZSHCOMPDIR=/usr/share/zsh/vendor-completions
else
	$(MAKE) install BIN=$(DEB_BIN) DESTDIR=$(CURDIR)/$(DEB_ROOT) PREFIX=/usr ZSHCOMPDIR=/usr/share/zsh/vendor-completions
endif
	gzip -9n $(DEB_ROOT)/usr/share/man/man1/*.1
	install -D -m 0644 packaging/copyright $(DEB_ROOT)/usr/share/doc/lockctl/copyright
	VERSION="$(DEB_VERSION)" ARCH="$(DEB_ARCH)" $(NFPM) package --config packaging/nfpm.yaml --packager deb --target dist/
	@ls dist/lockctl_*.deb

# make release: dist/release/ holds the release files of this commit, the
# same bytes on every build of it: lockctl_<os>_<arch>.tar.gz for linux and
# darwin on amd64 and arm64, the .deb for amd64 and arm64, and SHA256SUMS.
# scripts/release.sh says how (PLATFORMS=linux/amd64 DEB_ARCHES= for fewer).
# make release-check builds them twice and checks them (TestReleaseFull):
# minutes, so neither is part of make test, which checks a linux/amd64
# subset built by the same script.
release:
	GO=$(GO) ./scripts/release.sh

release-check:
	LOCKCTL_RELEASE_FULL=1 $(GO) test -count=1 -timeout 60m -run 'TestReleaseFull' -v .

# The linters first (a lint failure is quick), the tests, then a short
# bounded run of every fuzz target (FUZZTIME each).
test: lint
	./scripts/ensure-redis.sh
	./scripts/ensure-prometheus.sh
	./scripts/ensure-tools.sh
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	GO=$(GO) FUZZTIME=3s FUZZJOBS=2 FUZZPARALLEL=1 ./scripts/fuzz.sh

# The linters of .golangci.yml, over lockctl and over bench/peers (a module
# of its own). golangci-lint runs at a pinned version, fetched from the Go
# module proxy and built once: Go caches the binary, so later runs start at
# once. It stays out of lockctl's go.mod.
GOLANGCI_LINT := $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
lint:
	$(GOLANGCI_LINT) run ./...
	cd bench/peers && $(GOLANGCI_LINT) run ./...

# A longer search: every fuzz target for 60s in turn, a worker per CPU
# (make fuzz FUZZTIME=10m for more).
FUZZTIME ?= 60s
fuzz:
	./scripts/ensure-redis.sh
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZJOBS=1 FUZZPARALLEL=0 ./scripts/fuzz.sh

# Regenerates the committed completion scripts; TestCompletionsUpToDate fails when they drift.
completions:
	$(GO) run . completion bash > completions/lockctl.bash
	$(GO) run . completion zsh > completions/_lockctl
	$(GO) run . completion fish > completions/lockctl.fish
	$(GO) run . completion powershell > completions/lockctl.ps1

# Regenerates the committed man pages; TestManPagesUpToDate fails when they drift.
man:
	rm -rf man && $(GO) run ./cmd/genman man

bench:
	./scripts/ensure-redis.sh
	$(GO) test -run '^$$' -bench . -benchtime 2s ./pkg/...

# The full fault-injection tier (internal/testkit/chaos; up to 30 minutes). `make test` runs its short
# tier. Replay a run with LOCKCTL_CHAOS_SEED=<seed> make chaos.
chaos:
	./scripts/ensure-redis.sh
	LOCKCTL_CHAOS=full $(GO) test -count=1 -timeout 30m -v ./internal/testkit/chaos

# Regenerates RELIABILITY.md from a full run; the file is written even when a scenario fails,
# and the target then fails too.
reliability:
	./scripts/ensure-redis.sh
	LOCKCTL_CHAOS=full LOCKCTL_CHAOS_REPORT=$(CURDIR)/RELIABILITY.md $(GO) test -count=1 -timeout 30m ./internal/testkit/chaos

# lockctl beside redislock, redsync and redis_rate, interleaved (bench/peers
# is a module of its own, so peers never enter lockctl's go.mod).
bench-peers:
	./scripts/ensure-redis.sh
	cd bench/peers && $(GO) run . $(PEERS_FLAGS)

# Every peer comparison in one sitting, BASE (default HEAD~1) against the
# work tree, interleaved run by run (bench/sitting.sh).
bench-sitting:
	./scripts/ensure-redis.sh
	BASE=$(or $(BASE),HEAD~1) bench/sitting.sh
