#!/usr/bin/env bash
# Measures, in one run on this machine, the wall time of:
#   - `cdk synth` of an empty CDK Go app (the baseline),
#   - `go build` of the app,
#   - one environment's synth (prod), the synth command (all environments),
#   - `make review ENV=prod`, the test command and `make e2e-friday`,
# each "cold" (empty Go build cache, no cdk.out; modules and npm packages
# already downloaded, since download time measures the network, not us) and
# "warm" (run again right after; the synth, review and test figures are
# medians of three warm runs). Test runs use -count=1 so Go's test cache never
# answers for them. Writes docs/measurements.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/node_modules/.bin:$PATH
out=docs/measurements.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

secs() { # runs "$@" quietly, prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  if ! "$@" >"$tmp/last.log" 2>&1; then
    echo "measure: '$*' failed:" >&2
    grep -E -A12 -e '^(--- FAIL|FAIL|panic:)' -e 'WARNING: DATA RACE' "$tmp/last.log" | head -n 120 >&2
    tail -n 40 "$tmp/last.log" >&2; exit 1
  fi
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }'
}

# Cold: an empty Go build cache, Lambda binary cache (constructs/golambda)
# and test binary directory (scripts/gotest.sh), so nothing built before
# helps.
cold_cache() {
  export GOCACHE="$tmp/gocache-$1" MF_GOLAMBDA_CACHE="$tmp/lambdacache-$1" TESTBIN_DIR="$tmp/testbin-$1"
  mkdir -p "$GOCACHE" "$MF_GOLAMBDA_CACHE" "$TESTBIN_DIR"
}

rows=()
row() { # what, cold, warm, target
  rows+=("| $1 | $2 | $3 | $4 |"); echo "$1: cold $2 s, warm $3 s (target: $4)" >&2
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
within() { awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b ? "met" : "NOT met") }'; }
# The targets in seconds were set on a machine whose empty app took
# $target_base s; seconds() states one in seconds and scaled to this run's
# baseline, with both verdicts.
target_base=1.8
seconds() { # what, value, target in seconds
  local scaled
  scaled=$(awk -v t="$3" -v b="$base" -v r="$target_base" 'BEGIN { printf "%.0f", t * b / r }')
  echo "$1 <= $3 s: $(within "$2" "$3"); scaled to this baseline ($3 x $base / $target_base = $scaled s): $(within "$2" "$scaled")"
}

# Baseline and one environment, as a reviewer synthesises it. The warm
# figures are medians of three runs taken in pairs (empty app, then prod),
# so a burst of load on the machine stretches one pair, not the verdict; the
# ratio is the median of the three pairs' ratios.
empty_synth() { secs cdk synth --app "go run ./test/baseline/emptyapp" --output "$tmp/empty.out" --quiet; }
prod_synth() { secs cdk synth --quiet -c env=prod; }
cold_cache empty
c_empty=$(empty_synth)
cold_cache build
c_build=$(secs go build -o "$tmp/app" .)
touch app.go
w_build=$(secs go build -o "$tmp/app" .)
cold_cache prod
rm -rf cdk.out
c_prod=$(prod_synth)
empty_synth >/dev/null # links the empty app in this cache: not a pair's figure
empties=() prods=() ratios=()
# One command substitution per assignment: set -e stops at a failed run
# (an array or a multiple assignment would keep an empty figure instead).
for _ in 1 2 3; do
  e=$(empty_synth)
  p=$(prod_synth)
  empties+=("$e") prods+=("$p") ratios+=("$(ratio "$p" "$e")")
done
base=$(median "${empties[@]}")
row "baseline: \`cdk synth\` of an empty CDK Go app" "$c_empty" "$base" "the unit of the synth targets (warm: median of ${empties[*]})"
row "\`go build\` of the app" "$c_build" "$w_build" "-"
r=$(median "${ratios[@]}")
row "\`cdk synth -c env=prod\` (one environment, Lambdas built)" "$c_prod" "$(median "${prods[@]}")" "warm <= 3 x baseline: $r x (median of the pairs' ${ratios[*]}), $(within "$r" 3)"

# The synth command: every environment.
cold_cache synth
rm -rf cdk.out
c=$(secs cdk synth --quiet)
w=$(secs cdk synth --quiet)
row "synth command (\`make synth\`: dev, staging, prod)" "$c" "$w" "none; $(ratio "$w" "$base") x baseline"

# The review of one environment (synth, then cdk diff of its six stacks).
c=$(secs make --no-print-directory review ENV=prod)
runs=()
for _ in 1 2 3; do r=$(secs make --no-print-directory review ENV=prod); runs+=("$r"); done
w=$(median "${runs[@]}")
row "\`make review ENV=prod\`" "$c" "$w" "$(seconds warm "$w" 12) (warm: median of ${runs[*]})"

# The test command itself, as CI and a developer run it: install (a no-op
# when package*.json are unchanged), services, gofmt, tree check, vet, then
# the race, CDK and end-to-end lanes side by side.
cold_cache test
c=$(secs make --no-print-directory test)
runs=()
for _ in 1 2 3; do r=$(secs make --no-print-directory test); runs+=("$r"); done
w=$(median "${runs[@]}")
row "test command (\`make test\`)" "$c" "$w" "$(seconds cold "$c" 480); $(seconds warm "$w" 120) (warm: median of ${runs[*]})"

# The short end-to-end run alone (make test's e2e lane, 100 orders): cold,
# then the median of three warm runs (docs/design.md#sqs-fake).
cold_cache e2e
c=$(secs go test -count=1 ./internal/e2e)
runs=()
for _ in 1 2 3; do r=$(secs go test -count=1 ./internal/e2e); runs+=("$r"); done
w=$(median "${runs[@]}")
row "short end-to-end run (\`go test ./internal/e2e\`, 100 orders)" "$c" "$w" "warm <= 60 s: $(within "$w" 60) (warm: median of ${runs[*]})"

# Ten times Friday (make e2e-friday, 9,000 orders), once, warm: not part
# of make test.
w=$(secs make --no-print-directory e2e-friday)
row "ten times Friday (\`make e2e-friday\`, 9,000 orders)" "-" "$w" "<= 300 s: $(within "$w" 300)"

{
  echo "# Measurements"
  echo
  echo "Measured by \`make measure\` (scripts/measure.sh) on $(date -u +%Y-%m-%d), $(nproc) cores,"
  echo "$(go version | cut -d' ' -f3), Node $(node --version), aws-cdk-lib $(grep -m1 'aws-cdk-go/awscdk/v2 ' go.mod | awk '{print $2}'),"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Cold: empty Go build cache, Lambda binary cache and test binaries, no cdk.out (modules"
  echo "and npm packages already downloaded). Warm: the same command run again right after;"
  echo "where three warm runs are listed, the warm figure is their median."
  echo "Seconds of wall time."
  echo
  echo "| what | cold (s) | warm (s) | target |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Compare later changes with the baseline line of the same run, not with absolute numbers"
  echo "from another day or machine; a loaded machine (see the load average) stretches every line."
  echo "The targets in seconds were set where the empty app took $target_base s: each is also given"
  echo "scaled by this run's baseline, the same work on this machine."
  echo "Where the time goes and why: docs/design.md#performance."
} >"$out"
echo "wrote $out" >&2
