#!/bin/sh
# Per-invocation cost of `lockctl run NAME -- true` on loopback, beside
# `flock FILE true` and `etcdctl lock NAME true` (when etcd is installed:
# apt-get install -y etcd-server etcd-client hyperfine). Starts its own
# redis-server and etcd on free loopback ports; needs hyperfine for the
# comparison table, else falls back to a timing loop.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/lockctl" .
port=$(( 20000 + $$ % 10000 ))
redis-server --port $port --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
export LOCKCTL_URL=redis://127.0.0.1:$port/0
sleep 0.3
cmds="'$tmp/lockctl run bench -- true' 'flock $tmp/flock true'"
if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
	ep=$(( port + 1 )); pp=$(( port + 2 ))
	etcd --data-dir "$tmp/etcd" --listen-client-urls http://127.0.0.1:$ep --advertise-client-urls http://127.0.0.1:$ep \
		--listen-peer-urls http://127.0.0.1:$pp --initial-advertise-peer-urls http://127.0.0.1:$pp \
		--initial-cluster default=http://127.0.0.1:$pp --log-level error >"$tmp/etcd.log" 2>&1 &
	echo $! > "$tmp/etcd.pid"
	export ETCDCTL_API=3
	for i in $(seq 50); do etcdctl --endpoints 127.0.0.1:$ep endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
	cmds="$cmds 'etcdctl --endpoints 127.0.0.1:$ep lock bench true'"
fi
echo "machine: $(nproc) cores, $(uname -sr), $(redis-server --version | cut -d' ' -f3), $(go version | cut -d' ' -f3)"
if command -v hyperfine >/dev/null; then
	eval hyperfine -N --warmup 20 --min-runs 200 "$@" $cmds
else
	for c in "$tmp/lockctl run bench -- true" "flock $tmp/flock true"; do
		n=200; t0=$(date +%s%N)
		i=0; while [ $i -lt $n ]; do $c; i=$((i + 1)); done
		t1=$(date +%s%N)
		echo "$c: $(( (t1 - t0) / n / 1000 )) µs per run"
	done
fi
