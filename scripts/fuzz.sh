#!/bin/sh
# Runs every fuzz target (a func FuzzX in a *_test.go file) for FUZZTIME,
# one target per `go test` invocation: go test fuzzes one target per package
# run. `go test ./...` already runs each target's seed corpus; this searches
# for new inputs. New interesting inputs go to Go's build cache, never into
# the checkout; a crasher is written to the package's testdata/fuzz/FuzzX/
# and fails the run (keep it there as a regression seed once fixed).
#
#   ./scripts/fuzz.sh                          every target, FUZZTIME (3s) each
#   FUZZTIME=60s ./scripts/fuzz.sh             longer (make fuzz)
#   ./scripts/fuzz.sh ./pkg/lock FuzzParseValue   one target
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-3s}
only_pkg=${1:-}
only_fuzz=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "dir FuzzName" lines, one per target.
find . -name '*_test.go' -not -path './.git/*' -not -path './bin/*' -exec grep -HEo '^func Fuzz[A-Za-z0-9_]+' {} + |
	sed -E 's#^\./##; s#/?[^/]*_test\.go:func # #; s#^ #. #' | sort -u >"$tmp/targets"

start=$(date +%s)
while read -r dir fuzz; do
	pkg=./$dir
	[ "$dir" = . ] && pkg=.
	[ -z "$only_pkg" ] || [ "$pkg" = "./${only_pkg#./}" ] || [ "$pkg" = "$only_pkg" ] || continue
	[ -z "$only_fuzz" ] || [ "$fuzz" = "$only_fuzz" ] || continue
	t0=$(date +%s)
	if $GO test -run '^$' -fuzz "^$fuzz\$" -fuzztime "$FUZZTIME" "$pkg" </dev/null >"$tmp/out" 2>&1; then
		echo "fuzz: ok   $pkg $fuzz ($(($(date +%s) - t0))s)" >&2
	else
		cat "$tmp/out" >&2
		echo "fuzz: FAIL $pkg $fuzz ($(($(date +%s) - t0))s)" >&2
		echo "$pkg $fuzz" >>"$tmp/failed"
	fi
done <"$tmp/targets"
elapsed=$(($(date +%s) - start))

if [ -s "$tmp/failed" ]; then
	echo "fuzz: FAILED (${elapsed}s):" >&2
	sed 's/^/    /' "$tmp/failed" >&2
	echo "fuzz: a crasher is in the package's testdata/fuzz/FuzzX/; rerun it with go test -run 'FuzzX/NAME' PKG" >&2
	exit 1
fi
echo "fuzz: all targets ok (${elapsed}s)" >&2
