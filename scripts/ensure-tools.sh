#!/bin/sh
# Makes sure the Debian tools that the package and README tests use are
# installed: bash-completion (the completion of the installed package is
# loaded through it), man-db (man -w finds the installed pages) and jq (the
# README's examples pipe JSON through it). Installs them when running as
# root, otherwise says the one command that does and fails.
set -eu
missing=
[ -r /usr/share/bash-completion/bash_completion ] || missing="$missing bash-completion"
command -v man >/dev/null 2>&1 || missing="$missing man-db"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
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
