#!/bin/sh
# pkg/lock's single-goroutine acquire+release (BenchmarkAcquireRelease), before
# and after a change, in one run: the working tree and BASE (a git ref,
# default HEAD~1), each built with its own benchmark source (so a change of
# API between the two does not matter), run alternately in ROUNDS short
# rounds (default 8) so that the machine's drift hits both alike. Prints each
# round's ns/op, then the medians and the ratio base/new (above 1: new is
# faster).
set -eu
cd "$(dirname "$0")/.."
BASE=${BASE:-HEAD~1}
ROUNDS=${ROUNDS:-8}
BENCH=${BENCH:-'AcquireRelease/lock/goroutines=1$'}
BENCHTIME=${BENCHTIME:-3000x}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git archive "$BASE" | tar -x -C "$tmp/base"
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./pkg/lock)
go test -c -o "$tmp/new.test" ./pkg/lock
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for v in base new; do
		[ $((r % 2)) = 0 ] && v=$([ $v = base ] && echo new || echo base)
		(cd pkg/lock && "$tmp/$v.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME") |
			awk -v v="$v" -v r="$r" '/^Benchmark/ {
				for (i = 1; i <= NF; i++) if ($i == "ns/op") n = $(i-1)
				printf "round %d %-4s %-40s %10.0f ns/op\n", r, v, $1, n }'
	done
	r=$((r + 1))
done | tee "$tmp/out"
med() { sort -n | awk '{x[NR] = $1} END {print x[int((NR + 1) / 2)]}'; }
b=$(awk '$3 == "base" {print $5}' "$tmp/out" | med)
n=$(awk '$3 == "new" {print $5}' "$tmp/out" | med)
echo "median ns/op: base $b, new $n; base/new $(awk -v b="$b" -v n="$n" 'BEGIN {printf "%.3f", b / n}')"
