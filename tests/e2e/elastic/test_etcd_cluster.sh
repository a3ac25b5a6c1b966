#!/usr/bin/env bash
# --rdzv-backend etcd against a real three-member etcd cluster on loopback (issue 43 items 1-2),
# node agents running a shell program as their rank (torch-free: the rendezvous is under test):
#   1. two nodes form a job, finish, and the job's keys are gone from etcd;
#   2. a second job under the same prefix (same --rdzv-id) with another token is refused;
#   3. the etcd member the nodes talk to first is killed mid-run: the job does not notice;
#   4. the node that joined first is SIGKILLed (agent and rank): the survivor re-forms alone
#      (round 1) within the node timeout and finishes;
#   4b. etcd with auth enabled: nodes with MTRAIN_ETCD_USERNAME/PASSWORD form the job, one without is refused
#       (exit 2, before its rank; TLS and the other refusals: test_etcd_tls.sh);
#   4c. scale up: a third node arriving while two run (--nnodes 2:3) joins at once, no restart counted;
#   0/3. `mtrain env` reports each member's answer and version, and names the one killed;
#   5. the whole etcd cluster is lost: every node stops its ranks within the node timeout and
#      says why in one paragraph naming the members.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/etcd_lib.sh"
start_etcd
export MTRAIN_RDZV_TOKEN=etcd-e2e-0123456789abcdef
# 0. mtrain env: every member answers with the version the etcd binary has (issue 43 item 5);
#    the configured rendezvous (MTRAIN_RDZV_*) is reported without flags.
want=$(etcd --version | sed -n 's/^etcd Version: //p')
envj=$("$MTRAIN" env --rdzv-backend etcd --rdzv-endpoint "$ETCD_ENDPOINTS" --format json)
got=$(echo "$envj" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["rendezvous"]; print(r["answered"], *sorted({m["etcdserver"] for m in r["members"]}))')
[ "$got" = "3 $want" ] && ok "mtrain env: 3 of 3 etcd members answer, etcd $want" || fail "mtrain env said '$got' (want '3 $want')"
MTRAIN_RDZV_BACKEND=etcd MTRAIN_RDZV_ENDPOINT="$ETCD_ENDPOINTS" "$MTRAIN" env | grep -q "^  ${ETCD_CLIENT[2]}: *answers: etcd $want" \
  && ok "mtrain env reports the configured (MTRAIN_RDZV_*) etcd members" || fail "mtrain env text: $(MTRAIN_RDZV_BACKEND=etcd MTRAIN_RDZV_ENDPOINT="$ETCD_ENDPOINTS" "$MTRAIN" env | sed -n '/^rendezvous/,/^environment/p')"
PREFIX=/mtrain/rdzv/
# The rank: prints what it was given, then runs $1 seconds in round 0 and $2 in later rounds.
cat >"$WORK/rank.sh" <<'SH'
echo "rank $RANK of $WORLD_SIZE round ${MTRAIN_RDZV_ROUND:-?} master $MASTER_ADDR"
if [ "${MTRAIN_RDZV_ROUND:-0}" = 0 ]; then sleep "$1"; else sleep "$2"; fi
SH
# start_node TAG K NNODES ROUND0 LATER [extra args]: agent nK in the background (own process group).
start_node() {
  local tag=$1 k=$2 nn=$3 r0=$4 r1=$5; shift 5
  setsid timeout -k 5 120 "$MTRAIN" launch --rdzv-backend etcd --rdzv-endpoint "$ETCD_ENDPOINTS" --nnodes "$nn" \
    --rdzv-id "$tag" --node-name "n$k" --rdzv-last-call 1 --node-timeout 3 --rdzv-timeout 30 \
    --master-port "$(free_port)" --nproc-per-node 1 "$@" -- bash "$WORK/rank.sh" "$r0" "$r1" >"$WORK/$tag.node$k" 2>&1 &
  eval "agent$k=\$!"
}
show() { for f in "$WORK/$1".node*; do sed "s#^#    $(basename "$f") | #" "$f"; done; }

# 1. form, finish, clean up.
t0=$(date +%s.%N)
start_node form 0 2 1 0
wait_for "$WORK/form.node0" "nodes joined" 10
start_node form 1 2 1 0
wait "$agent0"; rc0=$?; wait "$agent1"; rc1=$?
t1=$(date +%s.%N)
[ "$rc0 $rc1" = "0 0" ] && ok "two nodes formed on etcd and finished in $(echo "$t1 - $t0" | bc) s" || { fail "exit codes $rc0 $rc1"; show form; }
grep -q "rank 0 of 2" "$WORK/form.node0" && grep -q "rank 1 of 2" "$WORK/form.node1" \
  && ok "node ranks follow join order (n0 rank 0, n1 rank 1)" || { fail "ranks"; show form; }
[ "$(keys_under "$PREFIX")" = 0 ] && ok "the finished job's keys are removed" || fail "keys left: $(etcdctl --endpoints "$ETCD_ENDPOINTS" get --prefix --keys-only $PREFIX)"

# 2. another token, same prefix.
start_node guard 0 2 1 0
wait_for "$WORK/guard.node0" "nodes joined" 10
MTRAIN_RDZV_TOKEN=another-token-0123456789abcdef start_node guard 1 2 1 0
wait "$agent1"; rc=$?
[ "$rc" != 0 ] && grep -q "belongs to another job" "$WORK/guard.node1" && ok "another token under the same prefix is refused (exit $rc)" \
  || { fail "the intruder was not refused (exit $rc)"; show guard; }
start_node guard 1 2 1 0
wait "$agent0"; rc0=$?; wait "$agent1"; rc1=$?
[ "$rc0 $rc1" = "0 0" ] && ok "the job itself then formed and finished" || { fail "guard job: $rc0 $rc1"; show guard; }

# 3. the first member dies mid-run.
start_node member 0 2 6 0
start_node member 1 2 6 0
wait_for "$WORK/member.node1" "rank [01] of 2" 20 || fail "member job did not start"
kill -9 "${etcd_pids[0]}"
"$MTRAIN" env --rdzv-backend etcd --rdzv-endpoint "$ETCD_ENDPOINTS" | grep -q "1 of 3 etcd members did not answer: ${ETCD_CLIENT[0]}" \
  && ok "mtrain env names the member that is down" || fail "mtrain env did not name ${ETCD_CLIENT[0]}"
wait "$agent0"; rc0=$?; wait "$agent1"; rc1=$?
[ "$rc0 $rc1" = "0 0" ] && ok "an etcd member killed mid-run: the job finished unharmed" || { fail "member loss: $rc0 $rc1"; show member; }
# Bring it back (same data dir) for the next cases.
etcd --name e0 --data-dir "$WORK/etcd0" --listen-client-urls "http://${ETCD_CLIENT[0]}" --advertise-client-urls "http://${ETCD_CLIENT[0]}" \
  --listen-peer-urls "http://${ETCD_PEER[0]}" >>"$WORK/etcd0.log" 2>&1 &
etcd_pids[0]=$!

# 4. the node that joined first is SIGKILLed; the survivor re-forms and finishes.
start_node lose 0 1:2 30 1 --max-restarts 2
wait_for "$WORK/lose.node0" "nodes joined" 10
start_node lose 1 1:2 30 1 --max-restarts 2
wait_for "$WORK/lose.node1" "rank 1 of 2" 20 || fail "lose job did not start"
tk=$(date +%s.%N)
kill -9 -- "-$agent0"
wait "$agent1"; rc1=$?
te=$(date +%s.%N)
[ "$rc1" = 0 ] && grep -q "rank 0 of 1 round 1" "$WORK/lose.node1" && ok "survivor re-formed alone (round 1) and finished, $(echo "$te - $tk" | bc) s after the kill" \
  || { fail "survivor: exit $rc1"; show lose; }
grep -q "n0 lost" "$WORK/lose.node1" && ok "the restart names the lost node n0" || fail "lost node not named"

# 4b. username/password: etcd with auth enabled; a user allowed the prefix forms the job, none is refused.
ctl() { etcdctl --endpoints "$ETCD_ENDPOINTS" "$@" >/dev/null; }
ctl user add root:root-pw && ctl user add mt:mt-pw && ctl role add root && ctl user grant-role root root && ctl role add mt \
  && ctl role grant-permission mt --prefix=true readwrite /mtrain/ && ctl user grant-role mt mt && ctl auth enable \
  || fail "could not enable etcd auth"
MTRAIN_ETCD_USERNAME=mt MTRAIN_ETCD_PASSWORD=mt-pw start_node auth 0 2 1 0
MTRAIN_ETCD_USERNAME=mt MTRAIN_ETCD_PASSWORD=mt-pw start_node auth 1 2 1 0
wait "$agent0"; rc0=$?; wait "$agent1"; rc1=$?
[ "$rc0 $rc1" = "0 0" ] && ok "with etcd auth: the job formed as user mt and finished" || { fail "auth job: $rc0 $rc1"; show auth; }
start_node noauth 0 1 1 0
wait "$agent0"; rc0=$?
[ "$rc0" = 2 ] && grep -q "^error: etcd at .* has authentication enabled and this node gave no user" "$WORK/noauth.node0" \
  && ! grep -q "^rank " "$WORK/noauth.node0" && ok "without credentials the node is refused before its rank (exit 2): $(grep -m1 -o "etcd at [^:]*:[0-9]* has[^.]*" "$WORK/noauth.node0")" \
  || { fail "no-credentials node: exit $rc0"; show noauth; }
ctl --user root:root-pw auth disable

# 4c. scale up: n0 and n1 run (--nnodes 2:3, --scale-up now); n2 arrives and the job re-forms
#     with it at once, as a membership change (restart count 0, no --max-restarts needed).
start_node grow 0 2:3 30 1 --scale-up now
wait_for "$WORK/grow.node0" "nodes joined" 10
start_node grow 1 2:3 30 1 --scale-up now
wait_for "$WORK/grow.node1" "rank [01] of 2" 20 || fail "grow job did not start"
tk=$(date +%s.%N)
start_node grow 2 2:3 30 1 --scale-up now
rcs=""
for k in 0 1 2; do wait "$(eval echo "\$agent$k")"; rcs="$rcs $?"; done
te=$(date +%s.%N)
[ "$rcs" = " 0 0 0" ] && grep -q "rank 2 of 3 round 1" "$WORK/grow.node2" && grep -q "rank 0 of 3 round 1" "$WORK/grow.node0" \
  && ok "n2 arrived: the job re-formed at 3 nodes (n2 last, n0 still rank 0) and finished $(echo "$te - $tk" | bc) s later" \
  || { fail "scale up: exit$rcs"; show grow; }
grep -q "the job restarts: node 'n2' is waiting to join: the job scales up from 2 nodes" "$WORK/grow.node0" \
  && ok "the running nodes were told why: n2 is waiting to join" || { fail "no scale-up reason"; show grow; }

# 5. the whole cluster is lost.
start_node gone 0 2 60 0
start_node gone 1 2 60 0
wait_for "$WORK/gone.node1" "rank [01] of 2" 20 || fail "gone job did not start"
tk=$(date +%s.%N)
stop_etcd
wait "$agent0"; rc0=$?; wait "$agent1"; rc1=$?
te=$(date +%s.%N)
el=$(echo "$te - $tk" | bc)
[ "$rc0" != 0 ] && [ "$rc1" != 0 ] && [ "$(echo "$el < 15" | bc)" = 1 ] && ok "cluster lost: both nodes stopped their ranks in $el s (exit $rc0 $rc1)" \
  || { fail "cluster lost: exit $rc0 $rc1 after $el s"; show gone; }
grep -q "no member of the etcd cluster answered" "$WORK/gone.node0" && ok "the reason names the cluster's members" || { fail "no reason"; show gone; }
pgrep -f "$WORK/rank.sh" >/dev/null && fail "ranks survive" || ok "no rank survives"
finish
