#!/bin/sh
# Hand-off under contention: P processes (default 8) loop for D seconds
# (default 10) on `lockctl run NAME [--fifo] -- CMD`, where CMD appends the
# wait lockctl reports (LOCKCTL_WAITED_MS) to a per-process file. Prints
# acquisitions/s, wait p50/p99 and fairness (max/min acquisitions per
# process), first without and then with --fifo. Starts its own redis-server.
set -eu
cd "$(dirname "$0")/.."
P=${P:-8}
D=${D:-10}
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp"/redis.pid 2>/dev/null) 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/lockctl" .
port=$(( 20000 + $$ % 10000 ))
redis-server --port $port --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
export LOCKCTL_URL=redis://127.0.0.1:$port/0
sleep 0.3
echo "machine: $(nproc) cores, $(uname -sr); $P processes, ${D}s each mode"
for mode in plain fifo; do
	flag=""; [ $mode = fifo ] && flag="--fifo"
	rm -f "$tmp"/w.*
	end=$(( $(date +%s) + D ))
	i=0
	while [ $i -lt "$P" ]; do
		( while [ "$(date +%s)" -lt $end ]; do
			"$tmp/lockctl" run contended $flag --ttl 10s -- sh -c "echo \$LOCKCTL_WAITED_MS >> $tmp/w.$i"
		done ) &
		i=$((i + 1))
	done
	wait
	total=$(cat "$tmp"/w.* | wc -l)
	p=$(sort -n "$tmp"/w.* | awk '{a[NR]=$1} END {printf "p50=%dms p99=%dms max=%dms", a[int(NR*0.5)], a[int(NR*0.99)], a[NR]}')
	fair=$(wc -l "$tmp"/w.* | grep -v total | awk 'NR==1 {mn=$1; mx=$1} {if ($1<mn) mn=$1; if ($1>mx) mx=$1} END {printf "max/min=%d/%d=%.2f", mx, mn, mx/mn}')
	echo "$mode: $total acquisitions, $(awk "BEGIN {printf \"%.1f\", $total / $D}")/s, wait $p, fairness $fair"
done
