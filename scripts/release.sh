#!/bin/sh
# Builds the release files of this checkout into OUT (default dist/release):
#
#   lockctl_<os>_<arch>.tar.gz    for each of PLATFORMS: the binary, LICENSE,
#                                 README.md, man/ and completions/
#   lockctl_<version>_<arch>.deb  for each of DEB_ARCHES (make deb, nfpm)
#   install.sh                    scripts/install.sh, for `curl ... | sh`
#   SHA256SUMS                    sha256sum's format, one line per file
#
# The same commit gives the same bytes: binaries built with -trimpath and
# CGO_ENABLED=0, stamped from git (no build path, host or time in them);
# archives with entries sorted by name, owned by 0:0, dated the commit's
# time, gzipped without a name or time; the .deb's entries dated the
# commit's time too (SOURCE_DATE_EPOCH). It needs git, go, GNU tar, gzip,
# sha256sum, make; nothing from the network but Go modules (nfpm).
#
# Environment: VERSION (default v + scripts/deb-version.sh), PLATFORMS
# (default "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"),
# DEB_ARCHES (default "amd64 arm64"; empty for none), OUT, GO, MAKE.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
MAKE=${MAKE:-make}
OUT=${OUT:-dist/release}
PLATFORMS=${PLATFORMS-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
DEB_ARCHES=${DEB_ARCHES-amd64 arm64}

commit=$(git rev-parse HEAD)
epoch=$(git log -1 --format=%ct)
ctime=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
if [ -n "${VERSION:-}" ]; then
	debversion=${VERSION#v}
else
	debversion=$(./scripts/deb-version.sh)
	VERSION=v$debversion
fi
pkg=github.com/lockctl/lockctl/cmd
ldflags="-X $pkg.Version=$VERSION -X $pkg.Commit=$commit -X $pkg.CommitTime=$ctime"

rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$OUT/.work
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# build OS ARCH: the binary for one platform, once.
build() {
	bin=$work/bin/$1_$2/lockctl
	if [ ! -x "$bin" ]; then
		echo "release: go build $1/$2" >&2
		CGO_ENABLED=0 GOOS=$1 GOARCH=$2 "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$bin" .
	fi
}

for p in $PLATFORMS; do
	os=${p%/*}
	arch=${p#*/}
	build "$os" "$arch"
	stage=$work/stage/lockctl_${os}_$arch
	mkdir -p "$stage/man" "$stage/completions"
	cp "$bin" "$stage/lockctl"
	cp LICENSE README.md "$stage/"
	cp man/*.1 "$stage/man/"
	cp completions/* "$stage/completions/"
	find "$stage" -type d -exec chmod 0755 {} +
	find "$stage" -type f -exec chmod 0644 {} +
	chmod 0755 "$stage/lockctl"
	(cd "$stage" && tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
		--format=gnu -cf - lockctl LICENSE README.md man completions) | gzip -9n >"$OUT/lockctl_${os}_$arch.tar.gz"
done

for arch in $DEB_ARCHES; do
	build linux "$arch"
	rm -f "dist/lockctl_${debversion}_$arch.deb"
	SOURCE_DATE_EPOCH=$epoch "$MAKE" --no-print-directory deb GO="$GO" DEB_BIN="$bin" DEB_VERSION="$debversion" DEB_ARCH="$arch" >&2
	mv "dist/lockctl_${debversion}_$arch.deb" "$OUT/"
done

cp scripts/install.sh "$OUT/install.sh"
chmod 0755 "$OUT/install.sh"
(cd "$OUT" && rm -rf .work && sha256sum install.sh lockctl_* >SHA256SUMS)
ls -1 "$OUT"
