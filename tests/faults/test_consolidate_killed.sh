#!/usr/bin/env bash
# Scenario (issue 17 item 14b): `mtrain checkpoint consolidate` killed by a signal while it
# writes. Before: <dest>.part (as large as the model) was left behind. Now SIGTERM, SIGINT and
# SIGHUP remove it and the command still dies of that signal; after SIGKILL (which nothing can
# catch) the next consolidate replaces the leftover, which is a regular file of ours.
. "$(dirname "$0")/lib.sh"
need_verify
wd=$WORK/run
# ~8 M parameters (32 MB of fp32 weights): a write long enough to be caught in the act.
run_mtrain 300 "$WORK/train.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 1 --checkpoint-interval 1 \
  --set model.depth=8 --set model.hidden=1024)
expect_rc 0 "training writes step_1"
ck=$wd/checkpoints/step_1
for sig in TERM INT HUP KILL; do
  out=$WORK/model_$sig.pt
  # Start consolidate, wait for its part file, signal it at once; print "rc seen".
  res=$("$PY" - "$MTRAIN" "$ck" "$out" "$sig" "$TAG" <<'PY'
import os, signal, subprocess, sys, time
mtrain, ck, out, sig, tag = sys.argv[1:]
env = dict(os.environ, MTRAIN_TEST_TAG=tag)
p = subprocess.Popen([mtrain, "checkpoint", "consolidate", ck, "-o", out], env=env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seen, deadline = False, time.time() + 60
while time.time() < deadline and p.poll() is None:
    if os.path.exists(out + ".part"):
        seen = True
        p.send_signal(getattr(signal, "SIG" + sig))
        break
    time.sleep(0.0005)
rc = p.wait(timeout=60)
print(rc, "seen" if seen else "missed")
PY
)
  rc=${res% *}
  if [ "${res#* }" != seen ]; then ok "SIG$sig: caught while writing" "(timing)" "write too quick; not judged"; continue; fi
  [ "$rc" = "-$(kill -l "$sig")" ] && ok "SIG$sig: consolidate dies of the signal" "-$(kill -l "$sig")" "$rc" \
    || fail "SIG$sig: consolidate dies of the signal" "-$(kill -l "$sig")" "$rc"
  if [ "$sig" = KILL ]; then
    run_mtrain 120 "$WORK/again.out" checkpoint consolidate "$ck" -o "$out"
    expect_rc 0 "after SIGKILL: the next consolidate replaces the leftover"
  fi
  [ ! -e "$out.part" ] && ok "SIG$sig: no $(basename "$out").part left" "absent" "absent" \
    || fail "SIG$sig: no $(basename "$out").part left" "absent" "$(stat -c %s "$out.part") bytes"
done
no_survivors
finish
