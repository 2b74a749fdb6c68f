#!/bin/sh
# Server instructions per operation, counted by valgrind's callgrind: the
# figure a loaded machine cannot move. bench/peers' server workload runs
# against a redis-server under callgrind (started through
# LOCKCTL_REDIS_SERVER), zeroing the counters before each contender's ops and
# reading them after (callgrind_control), and prints them beside the server
# µs (which valgrind inflates about 50 times: read only the instructions).
# Needs valgrind (apt-get install -y valgrind).
#
#   bench/instructions.sh                 # go run . in bench/peers
#   bench/instructions.sh /path/to/peers  # a built bench/peers binary
set -eu
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null 2>&1 || {
	echo "instructions: valgrind not found; install with: apt-get install -y valgrind" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/redis-server" <<WRAP
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file=/dev/null $(command -v redis-server) "\$@"
WRAP
chmod +x "$tmp/redis-server"
export LOCKCTL_REDIS_SERVER="$tmp/redis-server" PEERS_CALLGRIND=1
if [ $# -gt 0 ]; then
	"$1" -rounds "${ROUNDS:-3}" -only server
else
	(cd bench/peers && go run . -rounds "${ROUNDS:-3}" -only server)
fi
