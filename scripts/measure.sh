#!/usr/bin/env bash
# Measures, in one run on this machine, the wall time of:
#   - `cdk synth` of an empty CDK Go app (the baseline),
#   - `go build` of the app,
#   - the synth command (all environments) and the test command,
# each "cold" (empty Go build cache, no cdk.out; modules and npm packages
# already downloaded, since download time measures the network, not us) and
# "warm" (second run). Test runs use -count=1 so Go's test cache never
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
    echo "measure: '$*' failed:" >&2; tail -n 40 "$tmp/last.log" >&2; exit 1
  fi
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }'
}

cold_cache() { export GOCACHE="$tmp/gocache-$1"; mkdir -p "$GOCACHE"; }

rows=()
row() { rows+=("| $1 | $2 | $3 |"); echo "$1: cold $2 s, warm $3 s" >&2; }

# Baseline: empty CDK Go app.
cold_cache empty
c=$(secs cdk synth --app "go run ./test/baseline/emptyapp" --output "$tmp/empty.out" --quiet)
w=$(secs cdk synth --app "go run ./test/baseline/emptyapp" --output "$tmp/empty.out" --quiet)
row "baseline: \`cdk synth\` of an empty CDK Go app" "$c" "$w"

# go build of the app (the CDK program itself, not the Lambdas).
cold_cache build
c=$(secs go build -o "$tmp/app" .)
touch app.go
w=$(secs go build -o "$tmp/app" .)
row "\`go build\` of the app" "$c" "$w"

# The synth command: every environment, Lambdas bundled.
cold_cache synth
rm -rf cdk.out
c=$(secs cdk synth --quiet)
w=$(secs cdk synth --quiet)
row "synth command (\`make synth\`: dev, staging, prod, Lambdas built)" "$c" "$w"

# The test command itself, as CI and a developer run it: install (a no-op
# when package*.json are unchanged), services, gofmt, tree check, vet, then
# the race half and the CDK half side by side.
cold_cache test
c=$(secs make --no-print-directory test)
w=$(secs make --no-print-directory test)
row "test command (\`make test\`: checks, then the race, CDK and end-to-end lanes side by side)" "$c" "$w"
test_warm=$w

{
  echo "# Measurements"
  echo
  echo "Measured by \`make measure\` (scripts/measure.sh) on $(date -u +%Y-%m-%d), $(nproc) cores,"
  echo "$(go version | cut -d' ' -f3), Node $(node --version), aws-cdk-lib $(grep -m1 'aws-cdk-go/awscdk/v2 ' go.mod | awk '{print $2}')."
  echo "Cold: empty Go build cache and no cdk.out (modules and npm packages already downloaded)."
  echo "Warm: the same command run again right after. Seconds of wall time."
  echo
  echo "| what | cold (s) | warm (s) |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Target: warm \`make test\` under 180 s on this 2-core machine; this run: $test_warm s."
  echo
  echo "Compare later changes with the baseline line of the same run, not with absolute numbers"
  echo "from another day or machine."
} >"$out"
echo "wrote $out" >&2
