# Sourced by the *-ab.sh scripts: builds pkg/lock's test binary of the
# working tree ($tmp/new.test) and of the git ref $BASE ($tmp/base.test),
# in a temporary directory $tmp removed on exit. With SAME_BENCH=1 the base
# is built with the working tree's benchmark source (bench_test.go), so
# both run the same benchmark; otherwise each runs its own.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git archive "$BASE" | tar -x -C "$tmp/base"
if [ "${SAME_BENCH:-0}" = 1 ]; then
	cp pkg/lock/bench_test.go "$tmp/base/pkg/lock/bench_test.go"
fi
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./pkg/lock)
go test -c -o "$tmp/new.test" ./pkg/lock
