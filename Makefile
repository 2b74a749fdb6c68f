# lockctl: `make test` runs the whole suite on a fresh Debian/Ubuntu machine.
GO ?= go

.PHONY: test build completions bench lint

# CGO_ENABLED=0: one static binary, no libc to load at start-up.
build:
	CGO_ENABLED=0 $(GO) build -o bin/lockctl .

test:
	./scripts/ensure-redis.sh
	./scripts/ensure-prometheus.sh
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

# Regenerates the committed completion scripts; TestCompletionsUpToDate fails when they drift.
completions:
	$(GO) run . completion bash > completions/lockctl.bash
	$(GO) run . completion zsh > completions/_lockctl
	$(GO) run . completion fish > completions/lockctl.fish
	$(GO) run . completion powershell > completions/lockctl.ps1

bench:
	./scripts/ensure-redis.sh
	$(GO) test -run '^$$' -bench . -benchtime 2s ./pkg/...
