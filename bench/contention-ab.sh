#!/bin/sh
# pkg/lock under contention, before and after a change, in one run: the
# contention benchmarks (16 workers, 1ms hold; 200 goroutines, 2ms hold,
# plain and FIFO) of the working tree and of BASE (a git ref, default
# HEAD~1), built as two test binaries with the same benchmark source, run
# alternately in ROUNDS short rounds (default 5) so that the machine's
# drift hits both alike. Prints each round's acq/s and wait p99 per
# benchmark, then the medians.
set -eu
cd "$(dirname "$0")/.."
BASE=${BASE:-HEAD~1}
ROUNDS=${ROUNDS:-5}
BENCH=${BENCH:-'Contention/lock|PileUp'}
BENCHTIME=${BENCHTIME:-400x}
SAME_BENCH=1 . bench/ab-lib.sh
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for v in base new; do
		[ $((r % 2)) = 0 ] && v=$([ $v = base ] && echo new || echo base)
		(cd pkg/lock && "$tmp/$v.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME") |
			awk -v v="$v" -v r="$r" '/^Benchmark/ {
				for (i = 1; i <= NF; i++) { if ($i == "acq/s") a = $(i-1); if ($i == "wait-p99-ms") p = $(i-1) }
				printf "round %d %-4s %-45s %8.1f acq/s  p99 %7.1f ms\n", r, v, $1, a, p }'
	done
	r=$((r + 1))
done | tee "$tmp/out"
echo "medians:"
awk '{print $3 " " $4}' "$tmp/out" | sort -u | while read -r v name; do
	med() { sort -n | awk '{x[NR] = $1} END {print x[int((NR + 1) / 2)]}'; }
	acq=$(awk -v v="$v" -v b="$name" '$3 == v && $4 == b {print $5}' "$tmp/out" | med)
	p99=$(awk -v v="$v" -v b="$name" '$3 == v && $4 == b {print $8}' "$tmp/out" | med)
	printf "%-4s %-45s %8s acq/s  p99 %7s ms\n" "$v" "$name" "$acq" "$p99"
done
