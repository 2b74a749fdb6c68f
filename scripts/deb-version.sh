#!/bin/sh
# Prints the Debian package version of this checkout: the latest v* tag
# without its v (1.2.3, or 1.2.3+4.g1a2b3c4d5e6f for commits after it), or,
# with no tag, 0.0.0~git<commit date>.<commit>.
set -eu
if v=$(git describe --tags --match 'v[0-9]*' --abbrev=12 2>/dev/null); then
	echo "$v" | sed -e 's/^v//' -e 's/-\([0-9]*\)-g/+\1.g/'
	exit 0
fi
date=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d 2>/dev/null || echo 00000000)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
echo "0.0.0~git$date.$commit"
