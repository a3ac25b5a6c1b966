#!/usr/bin/env bash
# Completion in real shells: tmux runs bash, zsh and fish in a pty with the generated script from
# completions/ loaded; the test types `mtrain la<Tab>`, `mtrain launch --strat<Tab>` and
# `mtrain launch --strategy <Tab>` and reads the screen. Also: completions/ equals what
# `mtrain completion SHELL` prints now, and `mtrain __complete` gives the dynamic values.
. "$(dirname "$0")/../lib.sh"
SRC=${MTRAIN_SOURCE_DIR:?}
command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"

# 1. The committed scripts are the generator's output.
for pair in bash:mtrain.bash zsh:_mtrain fish:mtrain.fish; do
  sh=${pair%%:*} file=${pair#*:}
  if "$MTRAIN" completion "$sh" | diff -q - "$SRC/completions/$file" >/dev/null; then
    ok "completions/$file equals \`mtrain completion $sh\`"
  else
    fail "completions/$file differs from \`mtrain completion $sh\`; regenerate: mtrain completion $sh > completions/$file"
  fi
done

# 2. Dynamic values.
"$MTRAIN" __complete strategies >"$WORK/strategies" 2>&1
for s in ddp zero1 zero2 zero3 fsdp; do expect_in "$WORK/strategies" "$s"; done
"$MTRAIN" __complete models >"$WORK/models" 2>&1
expect_in "$WORK/models" "gpt"
printf 'node-a slots=2\nnode-b slots=2\n' >"$WORK/hosts.txt"
"$MTRAIN" __complete hosts launch --hostfile "$WORK/hosts.txt" --include >"$WORK/hosts" 2>&1
expect_in "$WORK/hosts" "node-b"
mkdir -p "$WORK/cfg/sub" && touch "$WORK/cfg/job.yaml" "$WORK/cfg/other.txt"
"$MTRAIN" __complete yaml "$WORK/cfg/" >"$WORK/yaml" 2>&1
expect_in "$WORK/yaml" "$WORK/cfg/job.yaml"
expect_in "$WORK/yaml" "$WORK/cfg/sub/"
expect_not_in "$WORK/yaml" "other.txt"

# 3. Real shells in tmux. PATH starts with the build's bin so `mtrain` is the one under test.
SOCK="mtrain_compl_$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null; rm -rf "$WORK"' EXIT
BIN=$(dirname "$MTRAIN")
screen() { tmux -L "$SOCK" capture-pane -p -J -t w; }
keys() { tmux -L "$SOCK" send-keys -t w "$@"; }
# wait_screen TEXT: up to 10 s for TEXT on the screen
wait_screen() {
  for _ in $(seq 100); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
  return 1
}
check_screen() {
  if wait_screen "$1"; then ok "$2"; else fail "$2: screen lacks '$1'"; screen | sed 's/^/    | /'; fi
}
clear_line() { keys C-u; keys C-l; sleep 0.3; }

run_shell() {  # NAME COMMAND LOAD-LINE
  local name=$1 cmd=$2 load=$3
  if ! command -v "${cmd%% *}" >/dev/null; then echo "SKIP: $name is not installed"; return; fi
  tmux -L "$SOCK" kill-server 2>/dev/null
  tmux -L "$SOCK" new-session -d -s w -x 200 -y 50 \
    "env -i HOME=$WORK TERM=xterm-256color PATH=$BIN:/usr/bin:/bin $cmd"
  sleep 1
  keys -l "$load"; keys Enter
  keys -l "echo LOADED-$name"; keys Enter
  if ! wait_screen "LOADED-$name"; then fail "$name did not start"; screen | sed 's/^/    | /'; return; fi
  clear_line
  keys -l "mtrain la"; keys Tab
  check_screen "mtrain launch" "$name: mtrain la<Tab> -> launch"
  clear_line
  keys -l "mtrain launch --strat"; keys Tab
  check_screen "mtrain launch --strategy" "$name: mtrain launch --strat<Tab> -> --strategy"
  clear_line
  keys -l "mtrain launch --strategy "; keys Tab; sleep 0.3; keys Tab
  if wait_screen "zero1" && wait_screen "zero3" && wait_screen "fsdp"; then
    ok "$name: mtrain launch --strategy <Tab> lists the strategies"
  else
    fail "$name: --strategy <Tab> did not list the strategies"; screen | sed 's/^/    | /'
  fi
  clear_line
  keys -l "mtrain bench comm --format "; keys Tab; sleep 0.3; keys Tab
  if wait_screen "json" && wait_screen "text"; then ok "$name: --format <Tab> lists text json (CLI11 choices)"
  else fail "$name: --format <Tab> lacks its choices"; screen | sed 's/^/    | /'; fi
  clear_line
  # `mtrain config show` has --hostfile and --include (launch gains --hostfile with multi-node).
  keys -l "mtrain config show --hostfile $WORK/hosts.txt --include node-"; keys Tab; sleep 0.3; keys Tab
  if wait_screen "node-a" && wait_screen "node-b"; then ok "$name: --include <Tab> offers the hostfile's hosts"
  else fail "$name: --include <Tab> lacks hosts from --hostfile"; screen | sed 's/^/    | /'; fi
  tmux -L "$SOCK" kill-server 2>/dev/null
}

run_shell bash "bash --norc --noprofile" "PS1='$ '; source $SRC/completions/mtrain.bash"
run_shell zsh "zsh -f" "PS1='$ '; autoload -U compinit && compinit -u -D; source $SRC/completions/_mtrain"
run_shell fish "fish --no-config" "function fish_prompt; echo '$ '; end; source $SRC/completions/mtrain.fish"
finish
