#!/bin/sh
# Runs every fuzz target (a func FuzzX in a *_test.go file) for FUZZTIME,
# one target per `go test` invocation: go test fuzzes one target per package
# run. `go test ./...` already runs each target's seed corpus; this searches
# for new inputs. New interesting inputs go to Go's build cache, never into
# the checkout; a crasher is written to the package's testdata/fuzz/FuzzX/
# and fails the run (keep it there as a regression seed once fixed).
#
# FUZZJOBS targets run at once (packages are spread over the jobs, so each
# package's instrumented build happens once), each with FUZZPARALLEL
# workers: the short run overlaps one target's build with another's fuzzing.
#
#   ./scripts/fuzz.sh                             every target, 3s each, 2 at once
#   FUZZTIME=60s FUZZJOBS=1 FUZZPARALLEL=0 ./scripts/fuzz.sh   longer (make fuzz); 0 = a worker per CPU
#   ./scripts/fuzz.sh ./pkg/lock FuzzParseValue   one target
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-3s}
FUZZJOBS=${FUZZJOBS:-2}
FUZZPARALLEL=${FUZZPARALLEL:-1}
only_pkg=${1:-}
only_fuzz=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "pkg FuzzName" lines, one per target.
find . -name '*_test.go' -not -path './.git/*' -not -path './bin/*' -exec grep -HEo '^func Fuzz[A-Za-z0-9_]+' {} + |
	sed -E 's#^\./##; s#/?[^/]*_test\.go:func # #; s#^ #. #; s#^([^.])#./\1#' | sort -u |
	while read -r pkg fuzz; do
		[ -z "$only_pkg" ] || [ "$pkg" = "./${only_pkg#./}" ] || [ "$pkg" = "$only_pkg" ] || continue
		[ -z "$only_fuzz" ] || [ "$fuzz" = "$only_fuzz" ] || continue
		echo "$pkg $fuzz"
	done >"$tmp/targets"

# Spread the packages over the jobs, the package with most targets first,
# each to the job with the fewest targets so far.
awk '{n[$1]++; t[$1] = t[$1] $0 "\n"} END {for (p in n) print n[p], p}' "$tmp/targets" | sort -rn |
	awk -v jobs="$FUZZJOBS" -v dir="$tmp" -v all="$tmp/targets" '
	BEGIN { if (jobs < 1) jobs = 1 }
	{ best = 0; for (j = 1; j < jobs; j++) if (load[j] < load[best]) best = j; load[best] += $1; job[$2] = best }
	END { while ((getline line < all) > 0) { split(line, f, " "); print line > (dir "/job" job[f[1]]) } }'

parallel=
[ "$FUZZPARALLEL" = 0 ] || parallel="-parallel $FUZZPARALLEL"

fuzz_one() {
	# shellcheck disable=SC2086
	$GO test -run '^$' -fuzz "^$2\$" -fuzztime "$FUZZTIME" $parallel "$1" </dev/null >"$3" 2>&1
}

run_job() {
	while read -r pkg fuzz; do
		t0=$(date +%s)
		# Go's fuzzer can end a short run with "context deadline exceeded"
		# when the time runs out while a loaded machine is still running
		# the baseline corpus: no input failed, so that run is retried once.
		if fuzz_one "$pkg" "$fuzz" "$1.out" ||
			{ grep -q 'context deadline exceeded' "$1.out" && ! grep -q 'Failing input written' "$1.out" &&
				echo "fuzz: retry $pkg $fuzz (the fuzzer ran out of time before it started)" >&2 &&
				fuzz_one "$pkg" "$fuzz" "$1.out"; }; then
			echo "fuzz: ok   $pkg $fuzz ($(($(date +%s) - t0))s)" >&2
		else
			cat "$1.out" >&2
			echo "fuzz: FAIL $pkg $fuzz ($(($(date +%s) - t0))s)" >&2
			echo "$pkg $fuzz" >>"$tmp/failed"
		fi
	done <"$1"
}

start=$(date +%s)
for j in "$tmp"/job*; do
	[ -e "$j" ] || continue
	run_job "$j" &
done
wait
elapsed=$(($(date +%s) - start))

if [ -s "$tmp/failed" ]; then
	echo "fuzz: FAILED (${elapsed}s):" >&2
	sed 's/^/    /' "$tmp/failed" >&2
	echo "fuzz: a crasher is in the package's testdata/fuzz/FuzzX/; rerun it with go test -run 'FuzzX/NAME' PKG" >&2
	exit 1
fi
echo "fuzz: all targets ok (${elapsed}s)" >&2
