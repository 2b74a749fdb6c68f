#!/bin/sh
# One sitting of every peer comparison, for a before/after: lockctl built
# from BASE (a git ref, default HEAD~1) and from the work tree, each beside
# the peers, their runs interleaved (base, head, head, base, ...) so the
# machine's drift hits both alike.
#   1. bench/peers (-only $ONLY, $ROUNDS rounds per run), $SITTINGS runs of
#      each build: the medians of every figure, base -> head (bench/sitting.py).
#   2. `run -n NAME -- true` against `flock -n FILE true`, by
#      bench/interleave.py ($RUNS rounds, shuffled).
#   3. the seeds' pile-up, bench/pileup.sh with BASE (200 processes).
#   4. with INSTRUCTIONS=1, the server's instructions per operation of both
#      builds under callgrind (bench/instructions.sh; needs valgrind).
# Needs redis-server, flock, python3, go.
#
#   bench/sitting.sh                   BASE=458b809 SITTINGS=5 bench/sitting.sh
set -eu
cd "$(dirname "$0")/.."
BASE=${BASE:-HEAD~1}
SITTINGS=${SITTINGS:-3}
ROUNDS=${ROUNDS:-2}
RUNS=${RUNS:-300}
ONLY=${ONLY:-lock,server,contention,limit}
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp/redis.pid" 2>/dev/null) 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/base" "$tmp/out"
git archive "$BASE" | tar -x -C "$tmp/base"
CGO_ENABLED=0 go build -o "$tmp/lockctl-head" .
(cd "$tmp/base" && CGO_ENABLED=0 go build -o "$tmp/lockctl-base" .)
(cd bench/peers && go build -o "$tmp/peers-head" .)
# The same harness for both: the work tree's bench/peers, built against
# each tree's lockctl (its replace points at the tree it sits in).
rm -rf "$tmp/base/bench/peers" && cp -r bench/peers "$tmp/base/bench/peers"
(cd "$tmp/base/bench/peers" && go build -o "$tmp/peers-base" .)
echo "# Sitting: base $(git rev-parse --short "$BASE"), head $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + changes')"
echo
echo "machine: $(nproc) cores, $(uname -sr), $(redis-server --version | sed 's/.*v=\([^ ]*\).*/redis-server \1/'), $(go version | cut -d' ' -f3); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
i=1
while [ "$i" -le "$SITTINGS" ]; do
	if [ $((i % 2)) -eq 1 ]; then order="base head"; else order="head base"; fi
	for v in $order; do
		"$tmp/peers-$v" -rounds "$ROUNDS" -only "$ONLY" >"$tmp/out/$v.$i.md"
	done
	i=$((i + 1))
done
echo
echo "## Library, beside the peers ($SITTINGS runs of each build, $ROUNDS rounds per run; medians over runs, base -> head)"
python3 bench/sitting.py "$tmp/out"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" --dir "$tmp" >/dev/null
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
echo
echo "## \`run -n NAME -- true\` against \`flock -n FILE true\` ($RUNS rounds, shuffled; load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
touch "$tmp/flock"
LOCKCTL_URL=redis://127.0.0.1:$port/0 python3 bench/interleave.py "$RUNS" \
	"$(command -v flock) -n $tmp/flock true" \
	"$tmp/lockctl-base run -n sitting -- true" \
	"$tmp/lockctl-head run -n sitting -- true"
echo
echo "## The seeds' pile-up (load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
BASE=$BASE CONTENDERS=${PILEUP:-"lockctl lockctl-fifo flock"} bench/pileup.sh
if [ -n "${INSTRUCTIONS:-}" ]; then
	for v in base head; do
		echo
		echo "## Server instructions per operation, $v (callgrind)"
		bench/instructions.sh "$tmp/peers-$v" | grep -E '^\| (workload|---|acquire|rate)'
	done
fi
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
