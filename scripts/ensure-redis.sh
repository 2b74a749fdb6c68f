#!/bin/sh
# Makes sure redis-server (Redis 7) is installed for the test suite: installs
# the Debian package when running as root, otherwise says the one command
# that does and fails.
set -eu
if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "redis-server not found: installing the Debian package" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends redis-server >&2
	# The package starts a system service on 6379; the tests start their own
	# servers on free ports and do not need it.
	exit 0
fi
echo "redis-server not found. Install it with:" >&2
echo "    sudo apt-get update && sudo apt-get install -y redis-server" >&2
exit 1
