#!/bin/sh
# The cost of events at the CLI: `lockctl run NAME -- true` with events (the
# default) beside the same with --no-events, in short hyperfine rounds whose
# order alternates (A B, then B A, ...), so the machine's drift hits both
# alike: wall time and lockctl's own CPU time. Then the server's side, which
# is not noisy: Redis commands and server CPU (INFO commandstats) per run.
# Starts its own redis-server on a loopback port; needs hyperfine
# (apt-get install -y hyperfine), redis-cli and python3.
#
#   bench/events-cli.sh            ROUNDS=20 RUNS=30 bench/events-cli.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-20}
RUNS=${RUNS:-30}
STATRUNS=${STATRUNS:-200}
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/lockctl" .
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" --dir "$tmp" >/dev/null
export LOCKCTL_URL=redis://127.0.0.1:$port/0
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
echo "machine: $(nproc) cores, $(uname -sr), redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"

on="$tmp/lockctl run bench-on -- true"
off="$tmp/lockctl run bench-off --no-events -- true"
r=1
while [ "$r" -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then
		set -- -n events "$on" -n no-events "$off"
	else
		set -- -n no-events "$off" -n events "$on"
	fi
	hyperfine -N -w 3 -r "$RUNS" --style none --export-json "$tmp/round$r.json" "$@" >/dev/null 2>"$tmp/hyperfine.err" || { cat "$tmp/hyperfine.err" >&2; exit 1; }
	r=$((r + 1))
done

# Server side: commands and server CPU per run, each way.
stats() { redis-cli -p "$port" INFO commandstats; }
serverside() { # label command
	redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
	i=0
	while [ "$i" -lt "$STATRUNS" ]; do $2 || exit 1; i=$((i + 1)); done
	stats | tr -d '\r' | sed -n "s/^cmdstat_\([a-z|]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/$1 \1 \2 \3/p" >>"$tmp/server.txt"
}
: >"$tmp/server.txt"
serverside events "$on"
serverside no-events "$off"

python3 - "$tmp" "$ROUNDS" "$STATRUNS" <<'EOF'
import json, statistics, sys, collections
tmp, rounds, statruns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ratios, means, cpu = [], collections.defaultdict(list), collections.defaultdict(list)
for r in range(1, rounds + 1):
    res = {x["command"]: x for x in json.load(open(f"{tmp}/round{r}.json"))["results"]}
    for k, v in res.items():
        means[k].append(v["median"] * 1000)
        cpu[k].append((v["user"] + v["system"]) * 1000)
    ratios.append(res["events"]["median"] / res["no-events"]["median"])
print(f"wall time, median of each round's median over {rounds} rounds (min-max of the rounds' medians):")
for k in ("no-events", "events"):
    m = means[k]
    print(f"  {k:10} {statistics.median(m):6.2f} ms ({min(m):.2f}-{max(m):.2f})")
d = [a - b for a, b in zip(means["events"], means["no-events"])]
print(f"  events / no-events, per round: median {statistics.median(ratios):.3f}x, min {min(ratios):.3f}x, max {max(ratios):.3f}x")
print(f"  events - no-events, per round: median {statistics.median(d):+.2f} ms, min {min(d):+.2f}, max {max(d):+.2f}")
print(f"lockctl's own CPU (user + system, mean of each round), median over {rounds} rounds (min-max):")
for k in ("no-events", "events"):
    m = cpu[k]
    print(f"  {k:10} {statistics.median(m):6.2f} ms ({min(m):.2f}-{max(m):.2f})")
dc = [a - b for a, b in zip(cpu["events"], cpu["no-events"])]
print(f"  events - no-events, per round: median {statistics.median(dc):+.2f} ms, min {min(dc):+.2f}, max {max(dc):+.2f}")
print(f"server side, per run ({statruns} runs each way):")
tot = collections.defaultdict(lambda: [0, 0])
rows = collections.defaultdict(dict)
for line in open(f"{tmp}/server.txt"):
    label, cmd, calls, usec = line.split()
    rows[label][cmd] = (int(calls), int(usec))
    tot[label][0] += int(calls); tot[label][1] += int(usec)
for label in ("no-events", "events"):
    detail = ", ".join(f"{c} {n/statruns:g}" for c, (n, _) in sorted(rows[label].items()))
    print(f"  {label:10} {tot[label][0]/statruns:g} commands, {tot[label][1]/statruns:.1f} us server CPU ({detail})")
EOF
