#!/usr/bin/env bash
# Scenario (issue 17 item 9): rank output carrying terminal escape sequences (an OSC window
# title, clear screen, a NUL). The failure report always shows control characters visibly
# (ESC as ^[, BEL as ^G, NUL as ^@); relayed lines too when the console is a terminal, unless
# --raw-output. Log files and piped output stay byte-exact.
. "$(dirname "$0")/lib.sh"
prog='printf "title \033]0;PWNED\007 clear \033[2J nul \000 end\n" >&2; exit 3'
run_mtrain 20 "$WORK/report" launch --nproc-per-node 1 --master-port 0 --log-dir "$WORK/logs" --job-id cc -- sh -c "$prog"
expect_rc 3 "rank prints escape sequences to stderr and exits 3"
expect_in "$WORK/report" 'title ^[]0;PWNED^G clear ^[[2J nul ^@ end'
if LC_ALL=C grep -q $'\033' "$WORK/report"; then fail "no raw ESC byte in the report" "none" "present"
else ok "no raw ESC byte in the report" "none" "none"; fi
cmp -s <(printf 'title \033]0;PWNED\007 clear \033[2J nul \000 end\n') "$WORK/logs/cc/attempt_0/0/stderr.log" \
  && ok "the log file is byte-exact" "raw bytes" "raw bytes" || fail "the log file is byte-exact" "raw bytes" "differs"
# On a terminal (script(1) gives the launcher a pty): relayed lines rendered, raw with --raw-output.
oprog='printf "out \033]0;PWNED\007 end\n"'
on_tty() {  # OUT ARGS...
  local out=$1; shift
  timeout -k 5 30 script -qec "$(printf '%q ' env "MTRAIN_TEST_TAG=$TAG" "$MTRAIN" launch --nproc-per-node 1 --master-port 0 "$@")" /dev/null >"$out" 2>&1
}
on_tty "$WORK/tty" -- sh -c "$oprog"
expect_in "$WORK/tty" 'out ^[]0;PWNED^G end'
on_tty "$WORK/tty_raw" --raw-output -- sh -c "$oprog"
if LC_ALL=C grep -q $'out \033]0;PWNED\007 end' "$WORK/tty_raw"; then ok "--raw-output relays the bytes as they are" "raw ESC" "raw ESC"
else fail "--raw-output relays the bytes as they are" "raw ESC" "$(head -c 200 "$WORK/tty_raw" | od -c | head -3)"; fi
run_mtrain 20 "$WORK/piped" launch --nproc-per-node 1 --master-port 0 -- sh -c "$oprog"
if LC_ALL=C grep -q $'out \033]0;PWNED\007 end' "$WORK/piped"; then ok "piped output is byte-exact" "raw ESC" "raw ESC"
else fail "piped output is byte-exact" "raw ESC" "rendered"; fi
no_survivors
finish
