# Sourced by the GPU-host scripts (scripts/gpu_host.sh, bench/run_graph_bench.sh).
#
# step NAME LOG [--limit SECONDS] COMMAND...: runs COMMAND with its output
# appended to LOG (stopped by `timeout` after SECONDS where given), prints and
# adds "NAME: rc=RC, S s" to the caller's `summary` array, sets the caller's
# `status` to 1 when COMMAND fails, and returns its exit code.
step() {
    local name=$1 log=$2 t0 rc
    shift 2
    local bound=()
    if [ "${1:-}" = --limit ]; then
        bound=(timeout "$2")
        shift 2
    fi
    t0=$(date +%s)
    echo "== $name: $*" | tee -a "$log"
    "${bound[@]}" "$@" >>"$log" 2>&1
    rc=$?
    local line="$name: rc=$rc, $(($(date +%s) - t0)) s"
    echo "== $line" | tee -a "$log"
    summary+=("$line")
    [ $rc -eq 0 ] || status=1
    return $rc
}
