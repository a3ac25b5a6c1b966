#!/usr/bin/env bash
# Run the fault-injection scenarios and print their results as a Markdown table (README.md).
#   tests/faults/table.sh BIN_DIR [SCENARIO...]
# BIN_DIR holds mtrain (and mtrain-worker in a torch build). Each scenario's status line
# (passed / FAILED / skipped: reason) goes to stderr; the table to stdout.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:?usage: tests/faults/table.sh BIN_DIR [SCENARIO...]}" && pwd); shift
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  for f in "$here"/test_*.sh; do s=$(basename "$f" .sh); scenarios+=("${s#test_}"); done
fi
results=$(mktemp)
status=0
for s in "${scenarios[@]}"; do
  start=$(date +%s)
  MTRAIN_FAULTS_RESULTS=$results MTRAIN_BIN_DIR=$bin MTRAIN_SOURCE_DIR=$(cd "$here/../.." && pwd) \
    timeout 900 bash "$here/test_$s.sh" >"$results.$s.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  case $rc in
    0) echo "$s: passed (${took}s)" >&2 ;;
    77) echo "$s: skipped: $(sed -n 's/^SKIP: //p' "$results.$s.log")" >&2 ;;
    *) echo "$s: FAILED (exit $rc, ${took}s)" >&2; sed 's/^/    | /' "$results.$s.log" | tail -20 >&2; status=1 ;;
  esac
  rm -f "$results.$s.log"
done
echo "| scenario | check | expected | observed | result |"
echo "|---|---|---|---|---|"
awk -F'\t' '{ for (i = 1; i <= 5; i++) gsub(/\|/, "\\|", $i); printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, substr($4, 1, 100), $5 }' "$results"
rm -f "$results"
exit $status
