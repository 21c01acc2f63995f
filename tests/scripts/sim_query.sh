# sim_query.sh (sourced): run_sim_query BIN_DIR BUILD_DIR runs a query on the
# simulated device under BIN_DIR's mqxd and mqx-run (an installed tree, an
# unpacked package): mqxd with an 8 MiB node of its own instance, and the
# build's mqx_sim_client oversubscribing it (three 3 MiB regions, every byte
# checked). Prints what it ran; returns non-zero with a line saying why.
# Without the client (a build without the daemon tests) it says so and
# returns 0.
run_sim_query() {
  local bin_dir=$1 build=$2
  local client=$build/tests/daemon/mqx_sim_client
  if [ ! -x "$client" ]; then
    echo "run_sim_query: no $client in this build: no query run on the simulated device"
    return 0
  fi
  local instance="sim-query-$$" log
  log=$(mktemp)
  MQX_DAEMON_INSTANCE=$instance MQX_DAEMON_CAPACITY=8MiB MQX_LOG_LEVEL=info "$bin_dir/mqxd" > "$log" 2>&1 &
  local daemon=$! waited=0
  until grep -q "mqxd: ready" "$log"; do
    sleep 0.1
    waited=$((waited + 1))
    if [ $waited -gt 100 ] || ! kill -0 $daemon 2> /dev/null; then
      echo "run_sim_query: $bin_dir/mqxd did not get ready in 10 s: $(tail -n 3 "$log")" >&2
      kill $daemon 2> /dev/null
      rm -f "$log"
      return 1
    fi
  done
  local out status
  out=$(MQX_DAEMON_INSTANCE=$instance timeout 60 "$bin_dir/mqx-run" -- "$client" work 3 $((3 << 20)) 4 7 2>&1)
  status=$?
  kill -TERM $daemon
  wait $daemon
  local daemon_status=$?
  rm -f "$log"
  if [ $status -ne 0 ]; then
    echo "run_sim_query: the query under $bin_dir/mqx-run exited $status: $(tail -n 3 <<<"$out")" >&2
    return 1
  fi
  grep -q "^evictions [1-9]" <<<"$out" || { echo "run_sim_query: the query never evicted: $out" >&2; return 1; }
  [ $daemon_status -eq 0 ] || { echo "run_sim_query: mqxd exited $daemon_status at SIGTERM" >&2; return 1; }
  echo "a query on the simulated device under $bin_dir/mqx-run: exit 0, $(grep '^evictions' <<<"$out")"
}
