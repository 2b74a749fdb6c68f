#!/bin/sh
# Makes sure the Prometheus tools the monitoring tests run are installed
# (promtool, prometheus, prometheus-node-exporter): installs the Debian
# packages when running as root, otherwise says the one command that does
# and fails.
set -eu
missing=
for b in promtool prometheus prometheus-node-exporter; do
	command -v "$b" >/dev/null 2>&1 || missing=1
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "Prometheus tools not found: installing the Debian packages" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends prometheus prometheus-node-exporter >&2
	# The packages start system services on 9090 and 9100; the tests start
	# their own on free ports and do not need them.
	exit 0
fi
echo "promtool, prometheus or prometheus-node-exporter not found. Install them with:" >&2
echo "    sudo apt-get update && sudo apt-get install -y prometheus prometheus-node-exporter" >&2
exit 1
