#!/usr/bin/env bash
# benchab.sh compares a Go benchmark of minisched between a git revision and
# the work tree, the way a change to the scheduler's speed is judged here:
# each side's test binary is built once, then the two run alternately (so
# that the machine's slow and fast minutes fall on both), and benchstat
# compares them.
#
#   hack/benchab/benchab.sh REV [RUNS] [PACKAGE] [BENCH]
#
# REV      the revision to compare with (e.g. HEAD, or HEAD~3)
# RUNS     how many runs of each side (default 10)
# PACKAGE  the package holding the benchmark (default ./minisched/)
# BENCH    the -test.bench pattern (default 'BenchmarkSchedulingBasic/nodes=500$')
#
# benchstat comes from bin/ (GOBIN=bin go install golang.org/x/perf/cmd/benchstat@latest).
# The results stay in a temporary directory, printed at the end.
set -euo pipefail
rev=${1:?usage: benchab.sh REV [RUNS] [PACKAGE] [BENCH]}
runs=${2:-10}
pkg=${3:-./minisched/}
bench=${4:-'BenchmarkSchedulingBasic/nodes=500$'}
root=$(git rev-parse --show-toplevel)
out=$(mktemp -d)
git -C "$root" worktree add --detach -q "$out/old" "$rev"
trap 'git -C "$root" worktree remove --force "$out/old"' EXIT
(cd "$out/old" && go test -c -o "$out/old.test" "$pkg")
(cd "$root" && go test -c -o "$out/new.test" "$pkg")
dir="$root/${pkg#./}"
for _ in $(seq "$runs"); do
	(cd "$dir" && "$out/old.test" -test.run '^$' -test.bench "$bench" -test.benchmem -test.count 1 >>"$out/old.txt")
	(cd "$dir" && "$out/new.test" -test.run '^$' -test.bench "$bench" -test.benchmem -test.count 1 >>"$out/new.txt")
done
"$root/bin/benchstat" "$out/old.txt" "$out/new.txt"
echo "results in $out"
