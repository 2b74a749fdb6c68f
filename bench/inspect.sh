#!/bin/sh
# Benchmark of `lockctl inspect` on a large keyspace, beside two scans of
# the same keys in the same run: the names-only floor (bench/peers/scannames:
# go-redis SCAN MATCH lock:* COUNT 1000, printing names, the batch size
# lockctl uses) and `redis-cli --scan` (the server's default COUNT 10).
#
#   bench/inspect.sh [TOTAL_KEYS] [LOCKS]     (default 1000000 100000)
#   ROUNDS=3 (default): every command once per round, in turn, so the
#   machine's drift shows as the min–max of the ratios.
#
# Starts its own redis-server on a free port (persistence off), loads
# TOTAL_KEYS keys with redis-cli --pipe, of which LOCKS are lockctl locks
# under lock:* (1% of them without TTL), builds lockctl, and prints wall time
# and peak RSS (from /usr/bin/time -v) for each command. Needs redis-server,
# redis-cli, go and GNU time. BEFORE=/path/to/older/lockctl also runs that
# binary's `inspect locks -o json` and TSV listing in every round.
set -eu
TOTAL=${1:-1000000}
LOCKS=${2:-100000}
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize yes --logfile "$dir/redis.log"
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done

CGO_ENABLED=0 go build -o "$dir/lockctl" .
(cd bench/peers && CGO_ENABLED=0 go build -o "$dir/scannames" ./scannames)
ROUNDS=${ROUNDS:-3}

# RESP for: LOCKS lock values (SET ... PX 1h, every 100th without TTL) and
# TOTAL-LOCKS unrelated keys, interleaved so SCAN sees both everywhere.
awk -v total="$TOTAL" -v locks="$LOCKS" 'BEGIN {
  every = int(total / locks)
  for (i = 0; i < total; i++) {
    if (i % every == 0 && n < locks) {
      k = "lock:job:" n
      v = sprintf("{\"token\":\"%032x\",\"fence\":%d,\"owner\":\"ci@build-%d:%d\",\"note\":\"bench\",\"acquired_ms\":1767225600000}", n, n + 1, n % 50, 1000 + n)
      if (n % 100 == 0) {
        printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v
      } else {
        printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nPX\r\n$7\r\n3600000\r\n", length(k), k, length(v), v
      }
      n++
    } else {
      k = "cache:item:" i
      printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$5\r\nvalue\r\n", length(k), k
    }
  }
}' | redis-cli -p "$port" --pipe >/dev/null

echo "keyspace: $(redis-cli -p "$port" dbsize) keys, $LOCKS under lock:* ($((LOCKS / 100)) without TTL)"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-5s %-44s %10s %10s %12s %10s\n' ROUND COMMAND WALL_S CPU_S PEAK_RSS_MB OUTPUT
: > "$dir/results"
measure() {
  label=$1; shift
  /usr/bin/time -v -o "$dir/time" "$@" > "$dir/out" 2>"$dir/err" || { cat "$dir/err" >&2; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$dir/time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$dir/time")
  # The client's own CPU (user + system); the rest of the wall time is
  # waiting for Redis and for the other processes on the machine.
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$dir/time")
  lines=$(wc -l < "$dir/out")
  printf '%-5s %-44s %10s %10s %12s %10s\n' "$r" "$label" "$wall" "$cpu" "$rss" "${lines}l"
  printf '%s\t%s\t%s\t%s\n' "$r" "$label" "$wall" "$rss" >> "$dir/results"
}
export LOCKCTL_URL="redis://127.0.0.1:$port/0"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  measure "floor: scannames (COUNT 1000, names only)" "$dir/scannames" -match 'lock:*'
  measure "lockctl inspect locks -o json" "$dir/lockctl" inspect locks -o json
  measure "lockctl inspect locks (TSV)" "$dir/lockctl" inspect locks
  if [ -n "${BEFORE:-}" ]; then
    measure "before: lockctl inspect locks -o json" "$BEFORE" inspect locks -o json
    measure "before: lockctl inspect locks (TSV)" "$BEFORE" inspect locks
  fi
  measure "redis-cli --scan --pattern 'lock:*'" redis-cli -p "$port" --scan --pattern 'lock:*'
  measure "lockctl inspect orphans" "$dir/lockctl" inspect orphans
  r=$((r + 1))
done
echo
# Each ratio is the command's wall time over the floor's in the same round.
awk -F'\t' '{w[$1, $2] = $3; rss[$2] = ($4 > rss[$2] ? $4 : rss[$2]); if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } if ($1 > rounds) rounds = $1 }
END {
  floor = "floor: scannames (COUNT 1000, names only)"
  printf "%-44s %-28s %s\n", "COMMAND", "WALL / FLOOR (min-max)", "PEAK_RSS_MB (max)"
  for (i = 1; i <= n; i++) {
    c = order[i]; lo = 1e9; hi = 0; s = 0
    for (r = 1; r <= rounds; r++) { x = w[r, c] / w[r, floor]; s += x; if (x < lo) lo = x; if (x > hi) hi = x }
    printf "%-44s %-28s %s\n", c, sprintf("%.2f (%.2f-%.2f)", s / rounds, lo, hi), rss[c]
  }
}' "$dir/results"
