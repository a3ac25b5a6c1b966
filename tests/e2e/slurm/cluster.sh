#!/usr/bin/env bash
# cluster.sh start DIR | stop DIR
#
# A private one-node Slurm cluster (slurmctld + slurmd from Debian, auth/munge with a private
# munged, or auth/none) for mtrain's end-to-end tests. Config, state, spool, logs and pid files
# all live under DIR; /etc is neither read nor written; no systemd. Needs root (SlurmUser=root).
#
# start: prints the slurm.conf path as its only stdout line (export SLURM_CONF=...), or exits 77
#        with the reason on stderr when this machine cannot run Slurm (tests then skip).
# stop:  cancels jobs, shuts the daemons down, then kills by PID whatever still carries this
#        cluster's marker in its environment (never by name), and removes DIR.
# Environment: MTRAIN_SLURM_AUTH=munge|none (default: munge when munged exists),
#              MTRAIN_SLURM_TIMEOUT=seconds to wait for an idle node (default 30).
set -uo pipefail

cmd=${1:-}; dir=${2:-}
skip() { echo "cluster.sh: cannot start Slurm here: $*" >&2; exit 77; }
die() { echo "cluster.sh: $*" >&2; exit 1; }
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop DIR"

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
  local node; node=$(hostname -s 2>/dev/null); node=${node:-localhost}
  local auth=${MTRAIN_SLURM_AUTH:-}
  [ -z "$auth" ] && { command -v munged >/dev/null && auth=munge || auth=none; }
  mkdir -p "$d/etc" "$d/state" "$d/spool" "$d/log" "$d/run"
  : >"$d/etc/plugstack.conf"   # keep /etc/slurm/plugstack.conf out

  # Node size as slurmd sees it: a config larger than the hardware drains the node.
  local hw cpus mem
  hw=$(slurmd -C 2>/dev/null | head -n1)
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw"); cpus=${cpus:-$(nproc)}
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw"); mem=$(( ${mem:-2048} * 8 / 10 ))

  local port=
  for _ in $(seq 40); do
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 10000 ))
    busy "$port" || busy $((port + 1)) || break
  done
  busy "$port" && die "no free port pair found"

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

  cat >"$d/etc/slurm.conf" <<CONF
# mtrain e2e test cluster ($d)
# cred_expire (AuthInfo): a requeued job waits that long before it may start again (the old
# credential must expire first); 10 s instead of the default 120 s keeps the requeue test short.
ClusterName=mtrain$port
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
CommunicationParameters=NoInAddrAny
$auth_lines
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
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
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$d/etc/slurm.conf
  (cd "$d" && exec env "$mark" "SLURM_CONF=$SLURM_CONF" setsid slurmctld -D -f "$SLURM_CONF" </dev/null >"$d/log/slurmctld.err" 2>&1) &
  local ctld=$!
  (cd "$d" && exec env "$mark" "SLURM_CONF=$SLURM_CONF" setsid slurmd -D -N "$node" -f "$SLURM_CONF" </dev/null >"$d/log/slurmd.err" 2>&1) &
  local slurmd=$!
  local deadline=$(( $(date +%s) + ${MTRAIN_SLURM_TIMEOUT:-30} )) state=
  fail() {
    for f in slurmctld.err slurmd.err slurmctld.log slurmd.log; do
      [ -s "$d/log/$f" ] && { echo "---- $f" >&2; tail -n 15 "$d/log/$f" >&2; }
    done
    stop "$d"; skip "$*"
  }
  until busy "$port"; do
    kill -0 $ctld 2>/dev/null || fail "slurmctld exited during start-up"
    [ "$(date +%s)" -lt "$deadline" ] || fail "slurmctld did not listen within the timeout"
    sleep 0.05
  done
  while state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null); [ "$state" != idle ]; do
    kill -0 $ctld 2>/dev/null || fail "slurmctld exited during start-up"
    kill -0 $slurmd 2>/dev/null || fail "slurmd exited during start-up"
    [ "$(date +%s)" -lt "$deadline" ] || fail "node $node not idle in time (state '$state')"
    sleep 0.1
  done
  echo "$SLURM_CONF"
}

case "$cmd" in
  start) start "$dir" ;;
  stop) stop "$dir" ;;
  *) die "usage: $0 start|stop DIR" ;;
esac
