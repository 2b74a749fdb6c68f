#!/bin/sh
# The seeds' hot lock: N processes (default 200) started at once on one lock,
# each running the same short critical section (read a counter, sleep 2 ms,
# write it back) and giving up after WAIT seconds (default 30: long enough
# for flock to let all 200 in, so that every contender is timed on the same
# number of hand-offs). Contenders, interleaved in ROUNDS rounds (default 3)
# with the order rotating:
#   lockctl       lockctl run hot -w ${WAIT}s --ttl 10s -- work
#   lockctl-fifo  the same with --fifo
#   flock         flock -w $WAIT FILE work (a local kernel lock: the floor)
#   etcdctl       timeout $WAIT etcdctl lock hot work (etcd 3.4 from Debian)
# Per contender and round: how many ran, how many were in within 500 ms of the
# start, how many gave up, hand-offs per second (ran / the time from the first
# entry to the last), lost updates (the counter against the entries), and for
# lockctl the Redis scripts and the Redis CPU per acquisition (INFO
# commandstats and INFO cpu before and after) and the peak of clients, of
# clients blocked in a command (waiters in XREAD BLOCK) and of clients
# subscribed to the lock's channel. For lockctl, in-order is the share of
# consecutive entries whose arrivals (entry time less LOCKCTL_WAITED_MS) are
# in order, within 2 ms: 100% with --fifo.
#
# The peaks are sampled every 100 ms through one connection (INFO clients,
# PUBSUB NUMSUB), whose cost is a few microseconds of Redis CPU a sample. A
# CLIENT LIST from a new redis-cli each time, with 200 clients connected,
# cost the server about 0.5 ms a sample: some 0.08 ms of the Redis CPU per
# acquisition this reports was the harness's, not lockctl's.
#
# MONITOR=1 also counts the commands lockctl's processes send per
# acquisition (redis-cli MONITOR, less the commands scripts make and the
# harness's own), with the five most frequent; MONITOR costs the server
# CPU too, so read the Redis CPU of a run without it.
#
# BASE=<git ref> adds the contenders base and base-fifo: lockctl built from
# that commit, for a before/after in the same run.
#
# Needs: redis-server, flock (util-linux), etcd and etcdctl (Debian packages
# etcd-server etcd-client; only when etcdctl is a contender), go. Starts
# its own redis-server and etcd.
set -eu
cd "$(dirname "$0")/.."
N=${N:-200}
ROUNDS=${ROUNDS:-3}
WAIT=${WAIT:-30}
CONTENDERS=${CONTENDERS:-"lockctl lockctl-fifo flock etcdctl"}
needs="redis-server redis-cli flock go"
case " $CONTENDERS " in *" etcdctl "*) needs="$needs etcd etcdctl" ;; esac
for c in $needs; do
	command -v $c >/dev/null 2>&1 || {
		echo "pileup: $c not found; install with: apt-get install -y redis-server util-linux etcd-server etcd-client" >&2
		exit 1
	}
done
tmp=$(mktemp -d)
cleanup() {
	kill "$(cat "$tmp/redis.pid" 2>/dev/null)" 2>/dev/null || true
	[ -n "${etcdpid:-}" ] && kill "$etcdpid" 2>/dev/null && wait "$etcdpid" 2>/dev/null || true
	# A server still writing its directory as it ends makes rm fail once.
	rm -rf "$tmp" 2>/dev/null || { sleep 1; rm -rf "$tmp"; }
}
trap cleanup EXIT INT TERM
CGO_ENABLED=0 go build -o "$tmp/lockctl" .
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && CGO_ENABLED=0 go build -o "$tmp/lockctl-base" .)
	CONTENDERS="$CONTENDERS base base-fifo"
fi
port=$(( 20000 + $$ % 10000 ))
redis-server --port $port --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
	--maxclients 10000 --logfile "$tmp/redis.log" >/dev/null
export LOCKCTL_URL=redis://127.0.0.1:$port/0
eport=$(( port + 1 ))
export ETCDCTL_API=3
etcdup=true
case " $CONTENDERS " in *" etcdctl "*)
	etcd --data-dir "$tmp/etcd" --listen-client-urls http://127.0.0.1:$eport \
		--advertise-client-urls http://127.0.0.1:$eport \
		--listen-peer-urls http://127.0.0.1:$(( port + 2 )) >"$tmp/etcd.log" 2>&1 &
	etcdpid=$!
	etcdup="etcdctl --endpoints=127.0.0.1:$eport endpoint health"
	;;
esac
i=0
until $etcdup >/dev/null 2>&1 && redis-cli -p $port ping >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -gt 100 ] && { echo "pileup: redis-server or etcd did not start" >&2; exit 1; }
	sleep 0.1
done

cat >"$tmp/work" <<'EOF'
#!/bin/sh
# the critical section: a read-modify-write that loses updates when two overlap
t=$(date +%s%N)
n=$(cat "$D/counter")
sleep 0.002
echo $((n + 1)) >"$D/counter"
echo "$t $1 ${LOCKCTL_WAITED_MS:-}" >>"$D/in"
EOF
chmod +x "$tmp/work"

stat() { redis-cli -p $port info "$1" | tr -d '\r'; }
scripts() { stat commandstats | awk -F'[:=,]' '/^cmdstat_(eval|evalsha):/ {s += $3} END {print s + 0}'; }
cpu() { stat cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }

# run CONTENDER ROUND: one pile-up; prints one result line.
run() {
	c=$1
	D="$tmp/$c.$2"
	mkdir -p "$D"
	echo 0 >"$D/counter"
	: >"$D/in"
	export D
	redis-cli -p $port flushall >/dev/null
	s0=$(scripts); c0=$(cpu)
	# One connection for every sample: prints "clients blocked subscribed"
	# per sample, its own connection not counted.
	( while [ ! -e "$D/stop" ]; do
		printf 'INFO clients\nPUBSUB NUMSUB lockctl:chan:{lock:hot}\n'
		sleep 0.1
	done | redis-cli -p $port | tr -d '\r' | awk -F: '
		/^connected_clients:/ { n = $2 - 1 }
		/^blocked_clients:/ { b = $2 }
		/^lockctl:chan:/ { getline s; print n, b, s; fflush() }' >"$D/clients" ) &
	sampler=$!
	monitor=
	case "${MONITOR:-}:$c" in 1:lockctl* | 1:base*)
		redis-cli -p $port monitor >"$D/monitor" &
		monitor=$!
		;;
	esac
	t0=$(date +%s%N)
	pids=""
	i=0
	while [ $i -lt "$N" ]; do
		case $c in
		lockctl) "$tmp/lockctl" run hot -w "${WAIT}s" --ttl 10s -- "$tmp/work" $i 2>/dev/null & ;;
		lockctl-fifo) "$tmp/lockctl" run hot --fifo -w "${WAIT}s" --ttl 10s -- "$tmp/work" $i 2>/dev/null & ;;
		base) "$tmp/lockctl-base" run hot -w "${WAIT}s" --ttl 10s -- "$tmp/work" $i 2>/dev/null & ;;
		base-fifo) "$tmp/lockctl-base" run hot --fifo -w "${WAIT}s" --ttl 10s -- "$tmp/work" $i 2>/dev/null & ;;
		flock) flock -w "$WAIT" "$D/lockfile" "$tmp/work" $i & ;;
		etcdctl) timeout "$WAIT" etcdctl --endpoints=127.0.0.1:$eport lock hot "$tmp/work" $i >/dev/null 2>&1 & ;;
		esac
		pids="$pids $!"
		i=$((i + 1))
	done
	wait_rc=0
	for p in $pids; do
		wait "$p" || wait_rc=$((wait_rc + 1))
	done
	s1=$(scripts); c1=$(cpu)
	touch "$D/stop"
	wait "$sampler" 2>/dev/null || true
	cmds=
	if [ -n "$monitor" ]; then
		kill "$monitor" 2>/dev/null || true
		wait "$monitor" 2>/dev/null || true
		# The commands of lockctl's processes: not a script's ([0 lua]),
		# not the harness's (INFO, PUBSUB, FLUSHALL, redis-cli's COMMAND DOCS,
		# MONITOR's OK).
		cmds=$(awk -v ran="$(wc -l <"$D/in")" '
			$3 == "lua]" || NF < 4 { next }
			{ c = tolower($4); gsub(/"/, "", c) }
			c == "info" || c == "pubsub" || c == "flushall" || c == "command" { next }
			{ n++; k[c]++ }
			END {
				if (ran == 0) exit
				s = sprintf("cmds/acq %.1f (", n / ran)
				for (j = 0; j < 5; j++) {
					best = ""; for (x in k) if (best == "" || k[x] > k[best]) best = x
					if (best == "") break
					s = s sprintf("%s%s %.2f", j ? ", " : "", best, k[best] / ran); delete k[best]
				}
				print s ")"
			}' "$D/monitor")
	fi
	ran=$(wc -l <"$D/in")
	counter=$(cat "$D/counter")
	sort -n "$D/in" >"$D/in.sorted"
	awk -v t0="$t0" -v n="$N" -v ran="$ran" -v counter="$counter" -v failed="$wait_rc" \
		-v scripts="$((s1 - s0))" -v cpu0="$c0" -v cpu1="$c1" -v c="$c" -v clients="$D/clients" -v cmds="$cmds" '
	{ t[NR] = $1; arr[NR] = $1 / 1e6 - $3 }
	END {
		in500 = 0
		for (k = 1; k <= NR; k++) if ((t[k] - t0) / 1e6 <= 500) in500++
		span = NR > 1 ? (t[NR] - t[1]) / 1e9 : 0
		rate = span > 0 ? (NR - 1) / span : 0
		inorder = 0
		for (k = 2; k <= NR; k++) if (arr[k] + 2 >= arr[k-1]) inorder++
		maxc = 0; maxb = 0; maxs = 0
		while ((getline line < clients) > 0) {
			split(line, f, " ")
			if (f[1] > maxc) maxc = f[1]; if (f[2] > maxb) maxb = f[2]; if (f[3] > maxs) maxs = f[3]
		}
		lost = ran - counter
		if (c ~ /^(lockctl|base)/) {
			spa = ran > 0 ? scripts / ran : 0
			cpa = ran > 0 ? (cpu1 - cpu0) * 1000 / ran : 0
			extra = sprintf("scripts/acq %.1f  redis-cpu/acq %.2fms  peak clients %d  blocked %d  subscribed %d%s", spa, cpa, maxc, maxb, maxs, cmds == "" ? "" : "  " cmds)
		} else {
			extra = "-"
		}
		order = (NR > 1 && c ~ /^(lockctl|base)/) ? sprintf("%.0f%%", 100 * inorder / (NR - 1)) : "-"
		printf "%-13s ran %3d/%d  in<=500ms %5.1f%%  gave-up %5.1f%%  hand-offs/s %6.1f  lost %d  in-order %s  %s\n",
			c, ran, n, 100 * in500 / n, 100 * (n - ran) / n, rate, lost, order, extra
	}' "$D/in.sorted"
}

etcdv=none
command -v etcd >/dev/null 2>&1 && etcdv=$(etcd --version | awk 'NR==1 {print $3}')
echo "machine: $(nproc) cores, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg); redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), etcd $etcdv; N=$N, wait ${WAIT}s, $ROUNDS rounds"
r=1
while [ $r -le "$ROUNDS" ]; do
	echo "round $r (load $(cut -d' ' -f1 /proc/loadavg))"
	set -- $CONTENDERS
	k=1
	while [ $k -lt "$r" ]; do first=$1; shift; set -- "$@" "$first"; k=$((k + 1)); done
	for c in "$@"; do
		run "$c" "$r"
		sleep 1
	done
	r=$((r + 1))
done
