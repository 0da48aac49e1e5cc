#!/usr/bin/env bash
# gotest.sh LANE [build flags] -- PACKAGE... [-- TEST FLAGS]
#
# `go test` for make test's lanes, with the test binaries kept between runs:
# go test links every package's test binary again on each run (about 2.5 s
# of CPU for a package that links aws-cdk-lib, about 1 s under -race), while
# `go test -c -o` leaves a binary that is up to date alone. The binaries of
# LANE live in $TESTBIN_DIR/LANE (default .cache/testbin); each runs in its
# package's directory as go test runs it (-test.count=1,
# -test.paniconexit0) with the TEST FLAGS, up to $TESTBIN_PARALLEL (default
# 2) at a time, in the order given. Prints go test's "ok"/"FAIL" line per
# package (a failure's output whole) and exits 1 if any package failed.
# docs/design.md#performance.
set -euo pipefail
lane=$1; shift
build=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do build+=("$1"); shift; done
[ $# -gt 0 ] && shift
pkgs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do pkgs+=("$1"); shift; done
[ $# -gt 0 ] && shift
run=(-test.count=1 -test.paniconexit0 "$@") # as go test runs them

root=$(pwd)
case $root in *[[:space:]]*) echo "gotest: the checkout's path has a space: $root" >&2; exit 1 ;; esac
dir=${TESTBIN_DIR:-$root/.cache/testbin}/$lane
mkdir -p "$dir" "$dir/.tmp"
# This run's own plan and links to its binaries: a run beside it has its own.
plan=$(mktemp "$dir/.tmp/plan.XXXXXX")
bins=$(mktemp -d "$dir/.tmp/run.XXXXXX")
trap 'rm -rf "$plan" "$bins"' EXIT

# Packages with tests, once each, in the order given; a binary's name is its
# package's last path element, so packages sharing one go to separate
# buckets (one `go test -c -o bucket/` each).
"${GO:-go}" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${pkgs[@]}" |
  awk 'NF == 2 && !seen[$1]++ { n = split($1, p, "/"); b = p[n]; print count[b]++, $1, $2, b }' >"$plan"
[ -s "$plan" ] || { echo "gotest: no packages with tests in ${pkgs[*]}" >&2; exit 1; }
# Two runs of a lane in one checkout take turns to build, and each runs
# hard links of its own binaries: a binary another run links again later
# is a new file, and this run's links keep the one it built.
exec 8>"$dir/.build.lock"
flock 8
for bucket in $(cut -d' ' -f1 "$plan" | sort -un); do
  mkdir -p "$dir/$bucket" "$bins/$bucket"
  # shellcheck disable=SC2046
  "${GO:-go}" test -c -o "$dir/$bucket/" "${build[@]}" $(awk -v b="$bucket" '$1 == b {print $2}' "$plan")
done
while read -r bucket _ _ name; do
  ln "$dir/$bucket/$name.test" "$bins/$bucket/$name.test"
done <"$plan"
flock -u 8

# One package: run its binary, then print its result under a lock so that
# parallel packages' outputs do not interleave.
one() {
  local bucket=$1 pkg=$2 pdir=$3 name=$4 out start end status=ok
  out=$(mktemp "$dir/.tmp/out.XXXXXX")
  start=$(date +%s.%N)
  (cd "$pdir" && exec "$bins/$bucket/$name.test" "${run[@]}") >"$out" 2>&1 || status=FAIL
  end=$(date +%s.%N)
  {
    flock 9
    if [ "$status" = FAIL ]; then cat "$out"; fi
    awk -v s="$start" -v e="$end" -v st="$status" -v p="$pkg" 'BEGIN { printf "%s\t%s\t%.3fs\n", (st == "ok" ? "ok  " : st), p, e - s }'
  } 9>"$dir/.lock"
  rm -f "$out"
  [ "$status" = ok ]
}
RUN_FLAGS=$(printf '%q ' "${run[@]}")
export -f one
export dir bins RUN_FLAGS
# xargs runs one job per plan line; its exit status is 123 if any failed.
xargs -P "${TESTBIN_PARALLEL:-2}" -L 1 bash -c 'eval "run=($RUN_FLAGS)"; one "$@"' _ <"$plan" || {
  echo "FAIL (lane $lane)"
  exit 1
}
