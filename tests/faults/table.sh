#!/usr/bin/env bash
# Run the fault-injection suite and print its results as the Markdown table of README.md.
#   tests/faults/table.sh BUILD_DIR [CTEST ARGS...]
# (BUILD_DIR/bin holds mtrain, and mtrain-worker in a torch build.)
set -uo pipefail
build=${1:?usage: tests/faults/table.sh BUILD_DIR [CTEST ARGS...]}; shift
results=$(mktemp)
(cd "$build" && MTRAIN_FAULTS_RESULTS=$results ctest -L faults -E "^hostile:" --output-on-failure "$@") >"$results.log" 2>&1
rc=$?
grep -E '^ *[0-9]+/[0-9]+ Test|tests passed' "$results.log" >&2
echo "| scenario | check | expected | observed | result |"
echo "|---|---|---|---|---|"
awk -F'\t' '{ for (i = 1; i <= 5; i++) gsub(/\|/, "\\|", $i); printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, substr($4, 1, 120), $5 }' "$results"
rm -f "$results" "$results.log"
exit $rc
