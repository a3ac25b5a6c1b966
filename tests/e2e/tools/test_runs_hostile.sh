#!/usr/bin/env bash
# `mtrain runs` and `mtrain runs plot` on a work dir someone else wrote (issue 40 items 2, 5, 6, 8,
# 10, 11, 12): names never run as gnuplot code, special files never block or grow memory, a bad
# metrics line or run is skipped and named while the others are listed, escape sequences never
# reach the terminal raw, and a failed write is an error naming where. Needs no worker: the run
# folders are written here as the trainer writes them. Every command runs under `timeout`, so a
# hang fails its check instead of the whole test.
. "$(dirname "$0")/../lib.sh"

# run_folder DIR [STRATEGY]: a finished run as the trainer leaves it (run.json, metrics.jsonl, summary.json).
run_folder() {
  mkdir -p "$1"
  printf '{"started": 1764000000, "pid": 1, "host": "nohost", "strategy": "ddp", "world_size": 2, "total_steps": 2}\n' >"$1/run.json"
  printf '{"mode": "train", "step": 1, "loss": 2.5}\n{"mode": "train", "step": 2, "loss": 2.0}\n' >"$1/metrics.jsonl"
  "$PY" -c 'import json, sys; json.dump({"strategy": sys.argv[2], "world_size": 2, "steps": 2, "final_loss": 2.0}, open(sys.argv[1], "w"))' \
    "$1/summary.json" "${2:-ddp}"
}
# runs_cmd OUT ARGS...: mtrain ARGS with stdout in OUT and stderr in OUT.err, at most 20 s.
runs_cmd() {
  local out=$1; shift
  timeout -k 2 20 "$MTRAIN" "$@" >"$out" 2>"$out.err"
  rc=$?
}
no_raw_escapes() {  # FILE WHAT: FILE has no ESC and no BEL byte
  if LC_ALL=C grep -q $'[\x1b\x07]' "$1"; then fail "$2: a raw ESC/BEL byte reaches the terminal"; else ok "$2: no raw ESC/BEL"; fi
}

# 1. Item 2: names from the work dir reach gnuplot as data. The probe's poison: a strategy with
# newlines and a gnuplot system() call, and a run folder whose own name carries the same.
P=$WORK/poison
run_folder "$P/wd/20261123_150401" $'ddp\nsystem("touch PWNED")\n#'
evil=$P/$'run\nsystem("touch PWNED")\n#'
run_folder "$evil"
mkdir -p "$WORK/tmp"
if command -v gnuplot >/dev/null; then
  (cd "$P" && TMPDIR=$WORK/tmp timeout -k 2 60 "$MTRAIN" runs plot wd/20261123_150401 -o one.svg >"$WORK/p1" 2>&1); rc=$?
  expect_rc 0 "runs plot, poisoned strategy, alone (its name is the chart's title too)"
  (cd "$P" && TMPDIR=$WORK/tmp timeout -k 2 60 "$MTRAIN" runs plot "$evil" wd/20261123_150401 -o two.png >"$WORK/p2" 2>&1); rc=$?
  expect_rc 0 "runs plot, poisoned strategy and folder name"
  [ -e "$P/PWNED" ] && fail "gnuplot ran system() from a run's name" || ok "no command from a name ran (no PWNED)"
  grep -q "<svg" "$P/one.svg" 2>/dev/null && ok "one.svg is drawn" || fail "one.svg missing"
  [ "$(stat -c %s "$P/two.png" 2>/dev/null || echo 0)" -gt 1000 ] && ok "two.png is drawn" || fail "two.png missing"
  grep -qF 'ddp^Jsystem("touch PWNED")^J#' "$P/one.svg" && ok "the strategy is shown as text, its newlines made visible" \
    || fail "the strategy is not in the chart as text"
  [ -z "$(ls -A "$WORK/tmp")" ] && ok "no temporary file left" || fail "left in TMPDIR: $(ls -A "$WORK/tmp")"
else
  echo "SKIP part: gnuplot is not installed (apt-get install gnuplot-nox)"
fi

# The matplotlib probe and program never import from the current folder: a matplotlib.py planted
# in the work dir one plots from does not run (whether or not a real matplotlib is installed).
mkdir -p "$P/planted" && printf 'open("PWNED", "w")\n' >"$P/planted/matplotlib.py"
(cd "$P/planted" && TMPDIR=$WORK/tmp timeout -k 2 60 "$MTRAIN" runs plot "$P/wd/20261123_150401" -o "$WORK/m.svg" \
  --plotter matplotlib >"$WORK/p3" 2>&1)
[ -e "$P/planted/PWNED" ] && fail "a matplotlib.py in the current folder ran" || ok "a planted matplotlib.py did not run"

# 2. Items 6, 8: run.json, summary.json, metrics.jsonl each a FIFO, a link to /dev/zero, a link to
# /dev/urandom: `runs` lists the other run, skips this one and says which file is what; `runs plot`
# of that run refuses it by name. No hang (20 s bound), no endless read.
S=$WORK/special
for f in run.json summary.json metrics.jsonl; do
  for kind in fifo zero urandom; do
    rm -rf "$S"
    run_folder "$S/wd/20261123_150401"
    bad=$S/wd/20261123_160000
    run_folder "$bad"
    rm -f "$bad/$f"
    case $kind in
      fifo) mkfifo "$bad/$f"; what="a FIFO (named pipe)" ;;
      zero) ln -s /dev/zero "$bad/$f"; what="a symbolic link to /dev/zero" ;;
      urandom) ln -s /dev/urandom "$bad/$f"; what="a symbolic link to /dev/urandom" ;;
    esac
    runs_cmd "$WORK/s.out" runs "$S/wd"
    if [ "$rc" -eq 0 ] && grep -q "^20261123_150401 " "$WORK/s.out" && ! grep -q "^20261123_160000" "$WORK/s.out" \
       && grep -qF "run 20261123_160000 skipped: $bad/$f is $what" "$WORK/s.out.err"; then
      ok "runs: $f as $kind is skipped and named, the other run listed"
    else
      fail "runs: $f as $kind (exit $rc)"; sed 's/^/    | /' "$WORK/s.out" "$WORK/s.out.err"
    fi
    runs_cmd "$WORK/s.plot" runs plot "$bad" -o "$WORK/s.png"
    if [ "$rc" -eq 2 ] && grep -qF "$bad/$f is $what" "$WORK/s.plot.err"; then
      ok "runs plot: $f as $kind is refused by name"
    else
      fail "runs plot: $f as $kind (exit $rc)"; sed 's/^/    | /' "$WORK/s.plot.err"
    fi
  done
done

# Item 8: a metrics.jsonl of 2 GiB with no newline (sparse: no disk) is read up to the cap with one
# bounded line buffer, not into one 2 GiB line: its peak RSS stays small (under a 1 GiB address
# space limit, so that a regression fails here instead of taking the machine's memory).
rm -rf "$S"
run_folder "$S/wd/20261123_150401"
truncate -s 2G "$S/wd/20261123_150401/metrics.jsonl"
"$PY" - "$MTRAIN" "$S/wd" "$WORK/big" <<'PYEOF' && ok "runs with a 2 GiB metrics line: exit 0, peak RSS under 64 MiB" || fail "runs with a 2 GiB metrics line"
import resource, subprocess, sys
mtrain, wd, out = sys.argv[1:4]
limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
with open(out, "w") as o, open(out + ".err", "w") as e:
    rc = subprocess.run([mtrain, "runs", wd], stdout=o, stderr=e, preexec_fn=limit, timeout=60).returncode
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"    exit {rc}, peak RSS {peak_mib:.1f} MiB")
assert rc == 0 and peak_mib < 64, (rc, peak_mib)
PYEOF
expect_in "$WORK/big.err" "metrics.jsonl: larger than 1024 MiB; only its first 1024 MiB read"
expect_in "$WORK/big.err" "longer than 64 KiB; line skipped"

# 3. Item 11: bad metrics lines are skipped and named (file:line: what), every run listed, exit 0.
B=$WORK/badlines
run_folder "$B/wd/20261123_150401"
run_folder "$B/wd/20261123_160000"
printf '%s\n' '{"mode": "train", "step": 1, "loss": 2.5}' '{"mode": "train", "step": "one", "loss": 2.0}' '[1, 2]' \
  '{"mode": "train", "step": 3, "lo' '{"mode": "train", "step": 4, "loss": 1.5}' >"$B/wd/20261123_160000/metrics.jsonl"
runs_cmd "$WORK/b" runs "$B/wd"
expect_rc 0 "runs with bad metrics lines"
[ "$(grep -c finished "$WORK/b")" -eq 2 ] && ok "both runs listed" || { fail "runs listed"; cat "$WORK/b"; }
expect_in "$WORK/b.err" "$B/wd/20261123_160000/metrics.jsonl:2: \"step\" is \"one\", not a step count"
expect_in "$WORK/b.err" "$B/wd/20261123_160000/metrics.jsonl:3: not a JSON object; line skipped"
expect_in "$WORK/b.err" "$B/wd/20261123_160000/metrics.jsonl:4: not JSON (syntax error"
runs_cmd "$WORK/b.json" runs "$B/wd" --format json
"$PY" - "$WORK/b.json" <<'PYEOF' && ok "JSON lists both runs" || fail "runs JSON with bad lines"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 2, runs
PYEOF
# Item 12: a step count of 1e300 is not shown as -9223372036854775808.
"$PY" -c 'import json, sys; json.dump({"strategy": "ddp", "world_size": 2, "steps": 1e300, "final_loss": 2.0}, open(sys.argv[1], "w"))' \
  "$B/wd/20261123_150401/summary.json"
runs_cmd "$WORK/b2" runs "$B/wd"
expect_rc 0 "runs with steps 1e300"
expect_not_in "$WORK/b2" "-9223372036854775808"
expect_in "$WORK/b2" "2/2"
expect_in "$WORK/b2.err" "\"steps\" is 1e+300, not a step count"

# 4. Item 10: an OSC window title (ESC ]0; … BEL) in a strategy and in a work dir's name.
E=$WORK/esc
run_folder "$E/"$'exp\e]0;owned\a'"/20261123_150401" $'ddp\e]0;pwned\a\e[2J'
runs_cmd "$WORK/e" runs "$E"
expect_rc 0 "runs with escape sequences in names"
no_raw_escapes "$WORK/e" "runs table"
expect_in "$WORK/e" 'exp^[]0;owned^G/20261123_150401'
expect_in "$WORK/e" 'ddp^[]0;pwned^G^[[2J'
runs_cmd "$WORK/e.json" runs "$E" --format json
no_raw_escapes "$WORK/e.json" "runs --format json"
"$PY" - "$WORK/e.json" <<'PYEOF' && ok "the JSON still holds the exact names" || fail "JSON names"
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["strategy"] == "ddp\x1b]0;pwned\x07\x1b[2J" and r["run"] == "exp\x1b]0;owned\x07/20261123_150401", r
PYEOF
printf '{"mode": "train", "step": "\033]0;x\007", "loss": 1}\n{"mode": "train", "step": 2, "loss": 1}\n' \
  >"$E/"$'exp\e]0;owned\a'"/20261123_150401/metrics.jsonl"
runs_cmd "$WORK/e2" runs "$E"
no_raw_escapes "$WORK/e2.err" "warnings naming a bad line and its folder"
expect_in "$WORK/e2.err" 'exp^[]0;owned^G/20261123_150401/metrics.jsonl:1:'

# 5. Item 5: writes are checked.
W=$WORK/write
run_folder "$W/wd/20261123_150401"
timeout -k 2 20 "$MTRAIN" runs "$W/wd" >/dev/full 2>"$WORK/full.err"; rc=$?
[ "$rc" -eq 1 ] && grep -qF "cannot write to standard output: No space left on device" "$WORK/full.err" \
  && ok "runs > /dev/full: exit 1, says standard output" || { fail "runs > /dev/full (exit $rc)"; cat "$WORK/full.err"; }
timeout -k 2 20 "$MTRAIN" runs "$W/wd" --format json >/dev/full 2>"$WORK/full.err"; rc=$?
[ "$rc" -eq 1 ] && grep -qF "standard output" "$WORK/full.err" && ok "runs --format json > /dev/full: exit 1" \
  || fail "runs --format json > /dev/full (exit $rc)"
runs_cmd "$WORK/f1" runs plot "$W/wd" -o /dev/full
[ "$rc" -ne 0 ] && grep -qF "/dev/full" "$WORK/f1.err" && ok "runs plot -o /dev/full: exit $rc, names /dev/full" \
  || fail "runs plot -o /dev/full (exit $rc)"
if command -v gnuplot >/dev/null; then
  ln -s /dev/full "$WORK/full.png"
  runs_cmd "$WORK/f2" runs plot "$W/wd" -o "$WORK/full.png"
  [ "$rc" -eq 1 ] && grep -qF "cannot write the chart to $WORK/full.png: No space left on device" "$WORK/f2.err" \
    && ok "runs plot -o full.png -> /dev/full: exit 1, names the path" || { fail "runs plot into /dev/full (exit $rc)"; cat "$WORK/f2" "$WORK/f2.err"; }
  timeout -k 2 60 "$MTRAIN" runs plot "$W/wd" -o "$WORK/ok.svg" >/dev/full 2>"$WORK/f3.err"; rc=$?
  [ "$rc" -eq 1 ] && grep -qF "standard output" "$WORK/f3.err" && ok "runs plot > /dev/full: exit 1, says standard output" \
    || fail "runs plot > /dev/full (exit $rc)"
fi
finish
