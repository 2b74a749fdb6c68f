#!/bin/sh
# Per-invocation cost of the CLI, in one hyperfine run per round:
#   `lockctl run NAME -- true` beside `flock FILE true` and `etcdctl lock NAME true`,
#   `lockctl version` beside a static Go hello-world (bench/peers/hello).
# Starts its own redis-server and etcd on loopback ports; needs hyperfine
# and python3 for the summary, and etcd and etcdctl for the etcdctl rows
# (apt-get install -y hyperfine etcd-server etcd-client; without etcd the
# run leaves etcdctl out and says so). hyperfine runs one command after the other, so
# the whole run is repeated ROUNDS times (default 3) and each ratio is
# given with its min–max over rounds: the machine's drift shows there.
#
#   bench/cli.sh [extra hyperfine flags]     ROUNDS=5 RUNS=300 bench/cli.sh
#   BEFORE=/path/to/older/lockctl bench/cli.sh   also times that binary's
#       `run` and `version` in the same rounds (a change's before/after)
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-200}
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/lockctl" .
(cd bench/peers && CGO_ENABLED=0 go build -o "$tmp/hello" ./hello)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" --dir "$tmp" >/dev/null
export LOCKCTL_URL=redis://127.0.0.1:$port/0
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
etcdv="no etcd (etcdctl left out)"
if command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1; then
	ep=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	pp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	etcd --data-dir "$tmp/etcd" --listen-client-urls http://127.0.0.1:$ep --advertise-client-urls http://127.0.0.1:$ep \
		--listen-peer-urls http://127.0.0.1:$pp --initial-advertise-peer-urls http://127.0.0.1:$pp \
		--initial-cluster default=http://127.0.0.1:$pp --log-level error >"$tmp/etcd.log" 2>&1 &
	echo $! > "$tmp/etcd.pid"
	export ETCDCTL_API=3
	for i in $(seq 100); do etcdctl --endpoints 127.0.0.1:$ep endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
	etcdv=$(etcd --version | head -1)
	set -- "$@" -n 'etcdctl lock' "etcdctl --endpoints 127.0.0.1:$ep lock bench true"
fi
echo "machine: $(nproc) cores, $(uname -sr), redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $etcdv, $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: lockctl $(du -k "$tmp/lockctl" | cut -f1) KB, hello $(du -k "$tmp/hello" | cut -f1) KB"
if [ -n "${BEFORE:-}" ]; then
	set -- "$@" -n 'lockctl run (before)' "$BEFORE run bench -- true" -n 'lockctl version (before)' "$BEFORE version"
fi
r=1
while [ "$r" -le "$ROUNDS" ]; do
	hyperfine -N --warmup 20 --min-runs "$RUNS" --style basic --export-json "$tmp/round$r.json" "$@" \
		-n 'flock' "flock $tmp/flock true" \
		-n 'lockctl run' "$tmp/lockctl run bench -- true" \
		-n 'hello (static Go)' "$tmp/hello" \
		-n 'lockctl version' "$tmp/lockctl version" >"$tmp/round$r.txt"
	r=$((r + 1))
done
python3 - "$tmp" "$ROUNDS" <<'PY'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
rs = []
for r in range(1, rounds + 1):
    with open(f"{tmp}/round{r}.json") as f:
        rs.append({x["command"]: x for x in json.load(f)["results"]})
names = list(rs[0])
# Medians: on a loaded machine a few runs stall for tens of ms and drag
# the means; the means are shown too.
# CPU (user + system, means) is what the process itself costs: on a
# loaded machine the wall time is mostly the waits for a core.
print(f"\n| command | median ms per round | mean ms per round | CPU ms (user+sys) per round |")
print("|---|---|---|---|")
for n in names:
    med = " / ".join("%.1f" % (r[n]["median"] * 1e3) for r in rs)
    mean = " / ".join("%.1f" % (r[n]["mean"] * 1e3) for r in rs)
    cpu = " / ".join("%.1f" % ((r[n]["user"] + r[n]["system"]) * 1e3) for r in rs)
    print(f"| `{n}` | {med} | {mean} | {cpu} |")
def ratio(a, b, label):
    if a not in rs[0] or b not in rs[0]:
        return
    xs = [r[a]["median"] / r[b]["median"] for r in rs]
    print(f"| {label} | {sum(xs) / len(xs):.2f} ({min(xs):.2f}–{max(xs):.2f}) |")
print("\n| ratio of medians | mean over rounds (min–max) |")
print("|---|---|")
ratio("lockctl run", "flock", "`lockctl run -- true` ÷ `flock`")
ratio("etcdctl lock", "lockctl run", "`etcdctl lock` ÷ `lockctl run` (times faster)")
ratio("lockctl version", "hello (static Go)", "`lockctl version` ÷ hello-world")
def cpu_ratio(a, b, label):
    xs = [(r[a]["user"] + r[a]["system"]) / (r[b]["user"] + r[b]["system"]) for r in rs]
    print(f"| {label} | {sum(xs) / len(xs):.2f} ({min(xs):.2f}–{max(xs):.2f}) |")
cpu_ratio("lockctl run", "flock", "CPU: `lockctl run -- true` ÷ `flock`")
cpu_ratio("lockctl version", "hello (static Go)", "CPU: `lockctl version` ÷ hello-world")
if "lockctl run (before)" in rs[0]:
    cpu_ratio("lockctl run (before)", "lockctl run", "CPU: `lockctl run`: before ÷ now")
    cpu_ratio("lockctl version (before)", "lockctl version", "CPU: `lockctl version`: before ÷ now")
if "lockctl run (before)" in rs[0]:
    ratio("lockctl run (before)", "flock", "before: `lockctl run -- true` ÷ `flock`")
    ratio("etcdctl lock", "lockctl run (before)", "before: `etcdctl lock` ÷ `lockctl run`")
    ratio("lockctl version (before)", "hello (static Go)", "before: `lockctl version` ÷ hello-world")
    ratio("lockctl run (before)", "lockctl run", "`lockctl run`: before ÷ now")
PY
