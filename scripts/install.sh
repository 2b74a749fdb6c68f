#!/bin/sh
# Installs lockctl from its release files: downloads the archive for this
# OS and CPU (linux or darwin, amd64 or arm64) and SHA256SUMS, checks the
# archive against it, and installs the binary into the bin directory. A
# checksum that does not match installs nothing and fails. When the release
# has no archive (404: a commit that was never released) and --source names
# a checkout, it builds that checkout with go instead.
#
#   install.sh [--version V] [--base-url URL] [--bin-dir DIR] [--source DIR]
#
# --version   a release tag, v1.2.3 (default: the latest release)
# --base-url  where the release files are (default
#             https://github.com/lockctl/lockctl/releases/download/<version>)
# --bin-dir   where lockctl goes (default $HOME/.local/bin)
# --source    a lockctl checkout to build when the release has no archive
#
# The GitHub Action (action.yml) runs it; so can GitLab CI and a shell.
set -eu

version=
base_url=
bin_dir=${HOME:-.}/.local/bin
source_dir=
while [ $# -gt 0 ]; do
	case $1 in
	--version) version=$2; shift 2 ;;
	--version=*) version=${1#*=}; shift ;;
	--base-url) base_url=$2; shift 2 ;;
	--base-url=*) base_url=${1#*=}; shift ;;
	--bin-dir) bin_dir=$2; shift 2 ;;
	--bin-dir=*) bin_dir=${1#*=}; shift ;;
	--source) source_dir=$2; shift 2 ;;
	--source=*) source_dir=${1#*=}; shift ;;
	-h | --help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install.sh: unknown argument $1" >&2; exit 64 ;;
	esac
done

say() { echo "install.sh: $*" >&2; }
die() { say "$*"; exit 1; }

case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) die "no release for $(uname -s): build from source (make build)" ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no release for $(uname -m): build from source (make build)" ;;
esac

if [ -z "$base_url" ]; then
	if [ -n "$version" ]; then
		base_url=https://github.com/lockctl/lockctl/releases/download/$version
	else
		base_url=https://github.com/lockctl/lockctl/releases/latest/download
	fi
fi
base_url=${base_url%/}
archive=lockctl_${os}_$arch.tar.gz

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockctl-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# fetch URL FILE: 0 fetched, 2 not there (404, or no such file), 1 failed.
fetch() {
	if command -v curl >/dev/null 2>&1; then
		code=$(curl -sSL --retry 3 -w '%{http_code}' -o "$2" "$1" 2>"$tmp/err") || {
			rc=$?
			[ "$rc" = 37 ] && return 2 # file:// that does not exist
			cat "$tmp/err" >&2
			return 1
		}
		case $code in
		2?? | 000) return 0 ;; # 000: file://
		404) return 2 ;;
		*) say "$1: HTTP $code"; return 1 ;;
		esac
	elif command -v wget >/dev/null 2>&1; then
		wget -q -S -O "$2" "$1" 2>"$tmp/err" && return 0
		grep -q ' 404 ' "$tmp/err" && return 2
		cat "$tmp/err" >&2
		return 1
	fi
	die "neither curl nor wget is installed"
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d ' ' -f 1
	else
		shasum -a 256 "$1" | cut -d ' ' -f 1
	fi
}

# from_source: the fallback for a version without release files.
from_source() {
	[ -n "$source_dir" ] || die "$base_url/$archive: not found (no release files for ${version:-this version}; pass --source with a checkout to build it)"
	command -v go >/dev/null 2>&1 || die "$base_url/$archive: not found, and go is not installed to build $source_dir"
	say "$base_url/$archive: not found; building $source_dir with go"
	pkg=github.com/lockctl/lockctl/cmd
	ldflags=
	if commit=$(git -C "$source_dir" rev-parse HEAD 2>/dev/null); then
		ldflags="-X $pkg.Commit=$commit -X $pkg.CommitTime=$(TZ=UTC git -C "$source_dir" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)"
	fi
	(cd "$source_dir" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/lockctl" .) ||
		die "go build in $source_dir failed"
}

rc=0
fetch "$base_url/$archive" "$tmp/$archive" || rc=$?
if [ "$rc" = 2 ]; then
	from_source
elif [ "$rc" != 0 ]; then
	die "cannot download $base_url/$archive"
else
	rc=0
	fetch "$base_url/SHA256SUMS" "$tmp/SHA256SUMS" || rc=$?
	[ "$rc" = 0 ] || die "cannot download $base_url/SHA256SUMS: the archive cannot be checked, so it is not installed"
	want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")
	[ -n "$want" ] || die "SHA256SUMS has no line for $archive: not installed"
	got=$(sha256 "$tmp/$archive")
	[ "$got" = "$want" ] || die "checksum mismatch for $archive: SHA256SUMS says $want, the download is $got; nothing installed"
	mkdir "$tmp/x"
	tar -xzf "$tmp/$archive" -C "$tmp/x" lockctl || die "cannot unpack $archive"
	mv "$tmp/x/lockctl" "$tmp/lockctl"
fi

# Into place with a rename, so that a running lockctl or a failed copy
# never leaves a half-written binary under the name.
mkdir -p "$bin_dir"
cp "$tmp/lockctl" "$bin_dir/.lockctl.$$"
chmod 0755 "$bin_dir/.lockctl.$$"
mv -f "$bin_dir/.lockctl.$$" "$bin_dir/lockctl"
say "installed $bin_dir/lockctl: $("$bin_dir/lockctl" version)"
echo "$bin_dir/lockctl"
