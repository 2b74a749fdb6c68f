#!/bin/sh
# Makes sure the Debian tools that the package and README tests use are
# installed: bash-completion (the completion of the installed package is
# loaded through it), man-db (man -w finds the installed pages), jq (the
# README's examples pipe JSON through it), and those named below. Installs them when running as
# root, otherwise says the one command that does and fails.
set -eu
missing=
[ -r /usr/share/bash-completion/bash_completion ] || missing="$missing bash-completion"
command -v man >/dev/null 2>&1 || missing="$missing man-db"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
# ^C in a loop is tested under dash and bash; the conditional-write example
# runs sqlite3; the README's systemd units are checked by systemd-analyze;
# lock finds its caller with ps where there is no /proc, and a test runs it.
command -v dash >/dev/null 2>&1 || missing="$missing dash"
command -v perl >/dev/null 2>&1 || missing="$missing perl"
command -v sqlite3 >/dev/null 2>&1 || missing="$missing sqlite3"
command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
command -v ps >/dev/null 2>&1 || missing="$missing procps"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "missing:$missing: installing the Debian packages" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $missing >&2
	exit 0
fi
echo "missing:$missing. Install with:" >&2
echo "    sudo apt-get update && sudo apt-get install -y$missing" >&2
exit 1
