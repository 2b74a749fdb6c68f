#!/bin/sh
# pkg/lock's single-goroutine acquire+release (BenchmarkAcquireRelease), before
# and after a change, in one run: the working tree and BASE (a git ref,
# default HEAD~1), each built with its own benchmark source (so a change of
# API between the two does not matter), run alternately in ROUNDS short
# rounds (default 8) so that the machine's drift hits both alike.
#
# Two figures per round: wall ns/op (what go test reports; on a machine
# whose loopback round trip drifts, mostly that round trip) and CPU µs/op
# (user + system of the test binary and of the redis-server it starts and
# reaps, from /usr/bin/time, divided by the operations: the work done,
# steadier than the wall time). Prints each round, then the medians and the
# median of the rounds' own base/new ratios (above 1: new is faster or
# cheaper).
set -eu
cd "$(dirname "$0")/.."
BASE=${BASE:-HEAD~1}
ROUNDS=${ROUNDS:-8}
BENCH=${BENCH:-'AcquireRelease/lock/goroutines=1$'}
OPS=${OPS:-3000}
. bench/ab-lib.sh
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for v in base new; do
		[ $((r % 2)) = 0 ] && v=$([ $v = base ] && echo new || echo base)
		(cd pkg/lock && /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$tmp/$v.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "${OPS}x") >"$tmp/run"
		awk -v v="$v" -v r="$r" -v ops="$OPS" -v cpu="$(cat "$tmp/cpu")" '/^Benchmark/ {
			for (i = 1; i <= NF; i++) if ($i == "ns/op") n = $(i-1)
			split(cpu, c, " ")
			printf "round %d %-4s %10.0f ns/op %8.1f cpu-us/op\n", r, v, n, (c[1] + c[2]) * 1e6 / ops }' "$tmp/run"
	done
	r=$((r + 1))
done | tee "$tmp/out"
med() { sort -n | awk '{x[NR] = $1} END {print x[int((NR + 1) / 2)]}'; }
for col in 4:ns/op 6:cpu-us/op; do
	f=${col%%:*} unit=${col#*:}
	b=$(awk -v f="$f" '$3 == "base" {print $f}' "$tmp/out" | med)
	n=$(awk -v f="$f" '$3 == "new" {print $f}' "$tmp/out" | med)
	ratio=$(awk -v f="$f" '$3 == "base" {b[$2] = $f} $3 == "new" {n[$2] = $f} END {for (k in b) if (k in n && n[k] > 0) print b[k] / n[k]}' "$tmp/out" | med)
	echo "median $unit: base $b, new $n; median of the rounds' base/new $ratio"
done
