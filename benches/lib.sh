# Sourced by the bench scripts that run servers side by side: one temp dir and one list of the
# processes a run started, both gone when the script exits however it exits, and one way to start
# a server and read the URL it says it listens on.
#
# bench_init NAME sets `tmp` and `pids`; a script with more to undo defines bench_cleanup_more.

bench_init() {
    bench_name=$1
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/agentdesk-$bench_name.XXXXXX")
    # nginx's workers (another user) read their config and logs here.
    chmod 755 "$tmp"
    pids=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if declare -F bench_cleanup_more >/dev/null; then bench_cleanup_more || true; fi
    rm -rf "$tmp"
}

# start OUT CMD...: runs CMD in the background (stdout in OUT, stderr in OUT.err) and waits up to
# 15 s for the `http://host:port` it prints; sets `url` and `pid`, or stops the script. Not in a
# command substitution: the process must be recorded in this shell's `pids` to be stopped.
start() {
    local out=$1
    shift
    "$@" >"$out" 2>"$out.err" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 150); do
        grep -qo 'http://[0-9.:]*' "$out" 2>/dev/null && break
        sleep 0.1
    done
    url=$(grep -o 'http://[0-9.:]*' "$out" | head -1 || true)
    [[ -n $url ]] || {
        echo "$bench_name: $1 did not start" >&2
        cat "$out" "$out.err" >&2
        exit 1
    }
}
