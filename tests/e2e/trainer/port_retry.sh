# Sourced by the TorchScript e2e tests (after ../lib.sh).
# --master-port 0 picks a port that is free when the launcher looks; on a machine busy with other
# jobs' connections it is sometimes taken by the time rank 0 binds it (EADDRINUSE, exit 1). Such a
# run is repeated (up to 3 times); any other failure counts.
retry_port_clash() {
  for _ in 1 2 3; do
    run_mtrain "$@"
    [ "$rc" -ne 0 ] && grep -q "Address already in use" "$1" || return 0
  done
}
