#!/usr/bin/env bash
# cluster.sh start DIR [NODES] | stop DIR
#
# A private Slurm cluster (slurmctld + slurmd from Debian, auth/munge with a private munged, or
# auth/none) for mtrain's end-to-end tests. Config, state, spool, logs and pid files all live
# under DIR; /etc is neither read nor written; no systemd. Needs root (SlurmUser=root).
#
# NODES=1 (default): one slurmd named after this machine.
# NODES=N>1: N slurmd on this machine, nodes node1..nodeN. Each is its own `slurmd -N nodeK`
#        with its own port, spool dir, pid and log file (Slurm's %n in the paths), so Slurm
#        sees N machines (all at 127.0.0.1: slurmd binds the address of this machine's name). The daemons run in a private mount namespace
#        whose /etc/hosts (a bind mount of DIR/etc/hosts; the machine's file is untouched) names
#        every node: the job's processes resolve node1 (MASTER_ADDR, a rendezvous endpoint) like
#        on a real cluster. Whatever runs outside (the tests, sbatch, squeue) reaches slurmctld
#        at 127.0.0.1 and never needs the node names. A node is "lost" by killing its slurmd and
#        everything under it (kill-node below); SlurmdTimeout is short so slurmctld notices.
#
# start: prints the slurm.conf path as its only stdout line (export SLURM_CONF=...), or exits 77
#        with the reason on stderr when this machine cannot run Slurm (tests then skip).
# kill-node DIR NAME: SIGKILLs node NAME's slurmd and every process of its job steps (its
#        slurmstepd's and their children), as a machine that dies would.
# stop:  cancels jobs, shuts the daemons down, then kills by PID whatever still carries this
#        cluster's marker in its environment (never by name), and removes DIR.
# Environment: MTRAIN_SLURM_AUTH=munge|none (default: munge when munged exists),
#              MTRAIN_SLURM_TIMEOUT=seconds to wait for an idle node (default 30).
set -uo pipefail

cmd=${1:-}; dir=${2:-}; arg=${3:-}
skip() { echo "cluster.sh: cannot start Slurm here: $*" >&2; exit 77; }
die() { echo "cluster.sh: $*" >&2; exit 1; }
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start DIR [NODES] | stop DIR | kill-node DIR NAME"

marker() { echo "MTRAIN_SLURM_CLUSTER=$1"; }
# PIDs of live processes carrying our marker.
ours() { grep -lzxF "$(marker "$1")" /proc/[0-9]*/environ 2>/dev/null | sed -n 's#^/proc/\([0-9]*\)/environ$#\1#p'; }
# The given PIDs and every descendant (job steps, the job's own processes).
tree() {
  local -A kids=(); local f line p q rest
  for f in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$f" || continue
    p=${f#/proc/}; p=${p%/stat}; rest=${line##*) }; q=${rest#* }; q=${q%% *}
    kids[$q]+=" $p"
  done
  local queue=("$@") out=()
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}"); out+=("$p")
    [ -n "${kids[$p]:-}" ] && queue+=(${kids[$p]})
  done
  echo "${out[@]}"
}
gone() {  # gone SECONDS PID... → true once none of them runs
  local n=$(( $1 * 10 )); shift
  while [ "$n" -gt 0 ]; do
    local alive=
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && return 0
    sleep 0.1; n=$((n - 1))
  done
  return 1
}
busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop() {
  [ -d "$1" ] || return 0
  local d; d=$(cd "$1" && pwd -P)
  export SLURM_CONF=$d/etc/slurm.conf
  if [ -f "$SLURM_CONF" ] && [ -s "$d/run/slurmctld.pid" ] && kill -0 "$(cat "$d/run/slurmctld.pid")" 2>/dev/null; then
    local jobs; jobs=$(timeout 10 squeue -h -o %A 2>/dev/null | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
      timeout 10 scancel $jobs 2>/dev/null
      for _ in $(seq 100); do [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.1; done
    fi
    timeout 10 scontrol shutdown >/dev/null 2>&1
  fi
  local munged=; [ -s "$d/run/munged.pid" ] && munged=$(cat "$d/run/munged.pid")
  local pids others all
  pids=$(ours "$d")
  others=$(for p in $pids; do [ "$p" = "$munged" ] || echo "$p"; done)
  if [ -n "$others" ]; then
    gone 10 $others || { all=$(tree $others); kill -TERM $all 2>/dev/null; gone 5 $all || { kill -KILL $all 2>/dev/null; gone 2 $all; }; }
  fi
  if [ -n "$munged" ] && grep -qzxF "$(marker "$d")" "/proc/$munged/environ" 2>/dev/null; then
    kill -TERM "$munged" 2>/dev/null; gone 5 "$munged" || kill -KILL "$munged" 2>/dev/null
  fi
  local left; left=$(ours "$d")
  [ -z "$left" ] || die "still running after stop: $left"
  rm -rf "$d"
}

start() {
  [ "$(id -u)" -eq 0 ] || skip "not root (the test cluster runs SlurmUser=root)"
  for b in slurmctld slurmd sbatch srun squeue sacct scontrol scancel sinfo; do
    command -v "$b" >/dev/null || skip "$b is not installed (Debian: slurmctld slurmd slurm-client)"
  done
  mkdir -p "$1" || die "cannot create $1"
  local d; d=$(cd "$1" && pwd -P)
  case "$d" in *[[:space:]#]*) die "DIR must not contain spaces or '#': $d";; esac
  local mark; mark=$(marker "$d")
  local nnodes=${2:-1}
  [[ "$nnodes" =~ ^[1-9]$ ]] || die "NODES must be 1-9, not '$nnodes'"
  local node; node=$(hostname -s 2>/dev/null); node=${node:-localhost}
  local names=("$node")
  if [ "$nnodes" -gt 1 ]; then names=(); for k in $(seq 1 "$nnodes"); do names+=("node$k"); done; fi
  local auth=${MTRAIN_SLURM_AUTH:-}
  [ -z "$auth" ] && { command -v munged >/dev/null && auth=munge || auth=none; }
  mkdir -p "$d/etc" "$d/state" "$d/spool" "$d/log" "$d/run"
  : >"$d/etc/plugstack.conf"   # keep /etc/slurm/plugstack.conf out

  # Node size as slurmd sees it: a config larger than the hardware drains the node.
  local hw cpus mem
  hw=$(slurmd -C 2>/dev/null | head -n1)
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw"); cpus=${cpus:-$(nproc)}
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw"); mem=$(( ${mem:-2048} * 8 / 10 ))

  # slurmctld on PORT, slurmd k on PORT+k (k = 1..NODES), all free.
  local port= free k
  for _ in $(seq 40); do
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 10000 ))
    free=1
    for k in $(seq 0 "$nnodes"); do busy $((port + k)) && free=; done
    [ -n "$free" ] && break
  done
  [ -n "$free" ] || die "no $((nnodes + 1)) free ports in a row found"

  local auth_lines
  if [ "$auth" = munge ]; then
    command -v munged >/dev/null || skip "munged is not installed (Debian: munge)"
    chmod a+rx "$d"   # munged wants world-executable parents of its socket
    mkdir -m 0700 "$d/munge"; mkdir -m 0755 "$d/munge-sock"
    if command -v mungekey >/dev/null; then mungekey --create --keyfile="$d/munge/munge.key" --bits=1024 >/dev/null
    else dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none; fi
    chmod 0400 "$d/munge/munge.key"
    env "$mark" setsid munged -F --key-file="$d/munge/munge.key" --socket="$d/munge-sock/munge.socket" \
      --pid-file="$d/run/munged.pid" --seed-file="$d/munge/seed" </dev/null >"$d/log/munged.log" 2>&1 &
    echo $! >"$d/run/munged.pid"
    for _ in $(seq 100); do [ -S "$d/munge-sock/munge.socket" ] && break; sleep 0.05; done
    [ -S "$d/munge-sock/munge.socket" ] || { cat "$d/log/munged.log" >&2; stop "$d"; skip "munged did not start"; }
    auth_lines="AuthType=auth/munge
AuthInfo=socket=$d/munge-sock/munge.socket,cred_expire=10
CredType=cred/munge"
  else
    auth_lines="AuthType=auth/none
AuthInfo=cred_expire=10
CredType=cred/none"
  fi

  # One node: this machine's name, the classic single-slurmd layout. Several: per-node address,
  # port and paths (%n is the node name), and a private hosts file naming them (see the top).
  local node_lines= per_node= timeouts= in_ns=()
  if [ "$nnodes" -eq 1 ]; then
    node_lines="NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
  else
    per_node=-%n
    # A lost node is DOWN after 10 s without answers (default 300 s); its jobs are told at once.
    timeouts="SlurmdTimeout=10"
    { cat /etc/hosts; for k in $(seq 1 "$nnodes"); do echo "127.0.0.1 node$k"; done; } >"$d/etc/hosts"
    for k in $(seq 1 "$nnodes"); do
      node_lines+="NodeName=node$k NodeAddr=127.0.0.1 Port=$((port + k)) CPUs=$cpus RealMemory=$mem State=UNKNOWN"$'\n'
      mkdir -p "$d/spool-node$k"
    done
    command -v unshare >/dev/null || skip "no unshare (util-linux) for the nodes' hosts file"
    in_ns=(unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$d/etc/hosts")
    "${in_ns[@]}" true 2>/dev/null || skip "cannot bind-mount a hosts file in a mount namespace here"
  fi
  cat >"$d/etc/slurm.conf" <<CONF
# mtrain e2e test cluster ($d)
# cred_expire (AuthInfo): a requeued job waits that long before it may start again (the old
# credential must expire first); 10 s instead of the default 120 s keeps the requeue test short.
ClusterName=mtrain$port
# Job ids from this cluster's own port: two test clusters at once on this host (ctest -j) would
# otherwise both run job 1, whose rendezvous port (29500 + id mod 2500) they then fight over.
FirstJobId=$port
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
CommunicationParameters=NoInAddrAny
$auth_lines
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool$per_node
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd$per_node.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd$per_node.log
$timeouts
PlugStackConfig=$d/etc/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# no slurmdbd: finished jobs are read back with sacct -c from the completion log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=3
MinJobAge=600
$node_lines
PartitionName=debug Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$d/etc/slurm.conf
  (cd "$d" && exec env "$mark" "SLURM_CONF=$SLURM_CONF" setsid "${in_ns[@]}" slurmctld -D -f "$SLURM_CONF" </dev/null >"$d/log/slurmctld.err" 2>&1) &
  local ctld=$!
  # Each slurmd in a mount namespace of its own: its job steps inherit it, which is how
  # kill-node finds every process of that node.
  local slurmds=() n
  for n in "${names[@]}"; do
    (cd "$d" && exec env "$mark" "SLURM_CONF=$SLURM_CONF" setsid "${in_ns[@]}" slurmd -D -N "$n" -f "$SLURM_CONF" </dev/null >"$d/log/slurmd${per_node:+-$n}.err" 2>&1) &
    slurmds+=($!)
    echo "$!" >"$d/run/daemon-$n.pid"
  done
  local deadline=$(( $(date +%s) + ${MTRAIN_SLURM_TIMEOUT:-30} )) state=
  fail() {
    for f in "$d"/log/*.err "$d"/log/*.log; do
      [ -s "$f" ] && { echo "---- ${f##*/}" >&2; tail -n 15 "$f" >&2; }
    done
    stop "$d"; skip "$*"
  }
  until busy "$port"; do
    kill -0 $ctld 2>/dev/null || fail "slurmctld exited during start-up"
    [ "$(date +%s)" -lt "$deadline" ] || fail "slurmctld did not listen within the timeout"
    sleep 0.05
  done
  local want; want=$(printf '%s idle\n' "${names[@]}" | sort)
  while state=$(timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | sort); [ "$state" != "$want" ]; do
    kill -0 $ctld 2>/dev/null || fail "slurmctld exited during start-up"
    for p in "${slurmds[@]}"; do kill -0 "$p" 2>/dev/null || fail "a slurmd exited during start-up"; done
    [ "$(date +%s)" -lt "$deadline" ] || fail "nodes not idle in time (state '${state//$'\n'/, }')"
    sleep 0.1
  done
  echo "$SLURM_CONF"
}

# kill-node DIR NAME: the node's slurmd and every process in its mount namespace (slurmstepd's,
# the batch shell or srun tasks there, their children), SIGKILLed at once.
kill_node() {
  local d; d=$(cd "$1" && pwd -P) || die "no cluster at $1"
  local pid; pid=$(cat "$d/run/daemon-$2.pid" 2>/dev/null) || die "no node '$2' in $d"
  grep -qzxF "$(marker "$d")" "/proc/$pid/environ" 2>/dev/null || die "node '$2' (pid $pid) is not running"
  local ns; ns=$(readlink "/proc/$pid/ns/mnt") || die "cannot read the mount namespace of pid $pid"
  [ "$ns" != "$(readlink /proc/self/ns/mnt)" ] || die "node '$2' shares this shell's mount namespace"
  local victims=() f p
  for f in /proc/[0-9]*/ns/mnt; do
    [ "$(readlink "$f" 2>/dev/null)" = "$ns" ] || continue
    p=${f#/proc/}; victims+=("${p%/ns/mnt}")
  done
  kill -KILL "${victims[@]}" 2>/dev/null
  gone 5 "${victims[@]}" || die "node '$2': still running after SIGKILL: ${victims[*]}"
}

case "$cmd" in
  start) start "$dir" "$arg" ;;
  stop) stop "$dir" ;;
  kill-node) [ -n "$arg" ] || die "usage: $0 kill-node DIR NAME"; kill_node "$dir" "$arg" ;;
  *) die "usage: $0 start DIR [NODES] | stop DIR | kill-node DIR NAME" ;;
esac
