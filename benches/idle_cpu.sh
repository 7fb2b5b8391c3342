#!/usr/bin/env bash
# Idle CPU of the default picture (console, embedded gateway, demo agent, sandbox), from /proc.
#
# Builds the release binary, starts `agentdesk` (no arguments: the console with the embedded
# sandbox) in a detached tmux session of 120×40 with HOME / XDG_* pointed at a fresh temp dir, lets
# it settle, then reads utime+stime of the process (all threads: the console's loop and polling,
# and the sandbox's server and 1 s venue tick) before and after an idle window, and prints the CPU
# use as % of one core, in total and per thread.
#
# Goal: ≤ 0.2 % of one core (issue 22; it was 0.5 % before).
#
# Environment: SETTLE (s, default 5), DURATION (s, default 30), NO_BUILD=1 to skip `cargo build`,
# BIN=path to measure another build (e.g. an older release, side by side).
set -euo pipefail

SETTLE=${SETTLE:-5}
DURATION=${DURATION:-30}
GOAL=0.2

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

command -v tmux >/dev/null || { echo "idle_cpu: tmux is required" >&2; exit 2; }

if [[ ${NO_BUILD:-0} != 1 ]]; then
    cargo build --release --quiet
fi
bin="${BIN:-$root/target/release/agentdesk}"
[[ -x $bin ]] || { echo "idle_cpu: $bin missing (cargo build --release)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/agentdesk-idle.XXXXXX")
sock="agentdesk-idle-$$"          # a private tmux server: the user's sessions are not touched
pid=""

cleanup() {
    tmux -L "$sock" kill-server 2>/dev/null || true
    if [[ -n $pid ]]; then
        # The console exits on SIGHUP from tmux; make sure of it before removing its files.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

mkdir -p "$tmp/home" "$tmp/data" "$tmp/config" "$tmp/cache" "$tmp/state"
# `exec` so the pane's process is the console itself; no AGENTDESK_* settings leak in, so the
# console starts the embedded sandbox.
tmux -L "$sock" -f /dev/null new-session -d -s idle -x 120 -y 40 \
    "exec env -u AGENTDESK_BASE_URL -u AGENTDESK_API_KEY -u AGENTDESK_CONFIG -u AGENTDESK_PROFILE \
     HOME='$tmp/home' XDG_DATA_HOME='$tmp/data' XDG_CONFIG_HOME='$tmp/config' \
     XDG_CACHE_HOME='$tmp/cache' XDG_STATE_HOME='$tmp/state' '$bin' 2>'$tmp/stderr'"

pane_pid=$(tmux -L "$sock" list-panes -t idle -F '#{pane_pid}' 2>/dev/null | head -n1 || true)
failed() {
    echo "idle_cpu: $1; its stderr:" >&2
    cat "$tmp/stderr" >&2 2>/dev/null || true
    exit 1
}
[[ -n $pane_pid ]] || failed "agentdesk exited at once"
# The pane's process should be agentdesk (exec); if a shell sits in between, take its child.
pid=$pane_pid
if [[ $(cat "/proc/$pid/comm" 2>/dev/null) != agentdesk ]]; then
    sleep 0.5
    # Read too early, the pane's process may not have exec'd yet: it is then agentdesk itself.
    if [[ $(cat "/proc/$pid/comm" 2>/dev/null) != agentdesk ]]; then
        pid=$(pgrep -P "$pane_pid" -x agentdesk | head -n1 || true)
    fi
fi
[[ -n $pid && -d /proc/$pid ]] || failed "agentdesk did not start"

sleep "$SETTLE"
kill -0 "$pid" 2>/dev/null || failed "agentdesk exited while settling"

hz=$(getconf CLK_TCK)

# One line per thread: tid name utime stime runtime_ns voluntary_ctxt nonvoluntary_ctxt.
snapshot() {
    local t stat rest name sched vol nvol
    for t in /proc/"$pid"/task/*; do
        stat=$(cat "$t/stat" 2>/dev/null) || continue
        name=$(tr ' ' '_' <"$t/comm" 2>/dev/null) || continue
        rest=${stat##*) }                         # fields from 3 (state) on; comm may hold spaces
        read -r -a f <<<"$rest"
        sched=$(awk '{print $1}' "$t/schedstat" 2>/dev/null || echo 0)
        vol=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)
        nvol=$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)
        echo "${t##*/} $name ${f[11]} ${f[12]} ${sched:-0} ${vol:-0} ${nvol:-0}"
    done
}
proc_ticks() {
    local rest
    rest=$(cat "/proc/$pid/stat")
    rest=${rest##*) }
    read -r -a f <<<"$rest"
    echo $((f[11] + f[12]))
}

echo "agentdesk pid $pid ($(ls /proc/"$pid"/task | wc -l) threads), settled ${SETTLE}s; measuring ${DURATION}s idle…"
tmux -L "$sock" capture-pane -p -t idle | head -n 2 | sed 's/^/  screen: /'

before_total=$(proc_ticks)
before=$(snapshot)
t_start=$(date +%s.%N)
sleep "$DURATION"
kill -0 "$pid" 2>/dev/null || failed "agentdesk exited during the measurement"
after_total=$(proc_ticks)
after=$(snapshot)
t_end=$(date +%s.%N)

awk -v hz="$hz" -v b="$before_total" -v a="$after_total" -v t0="$t_start" -v t1="$t_end" \
    -v goal="$GOAL" -v before="$before" -v after="$after" '
function pct(ticks) { return ticks / hz / secs * 100 }
BEGIN {
    secs = t1 - t0
    n = split(before, lines, "\n")
    for (i = 1; i <= n; i++) {
        split(lines[i], f, " ")
        bt[f[1]] = f[3] + f[4]; bn[f[1]] = f[5]; bc[f[1]] = f[6] + f[7]
    }
    n = split(after, lines, "\n")
    printf "\nper thread (Δ over %.1f s; cpu from utime+stime ticks, runtime from schedstat):\n", secs
    printf "  %-8s %-22s %7s %9s %10s %9s\n", "tid", "name", "ticks", "% core", "runtime", "wakeups/s"
    sum = 0
    for (i = 1; i <= n; i++) {
        split(lines[i], f, " ")
        tid = f[1]; ticks = f[3] + f[4] - bt[tid]; ns = f[5] - bn[tid]; cs = f[6] + f[7] - bc[tid]
        sum += ticks
        printf "  %-8s %-22s %7d %8.3f%% %8.1fms %9.2f%s\n", tid, f[2], ticks, pct(ticks), ns / 1e6, cs / secs, (tid in bt) ? "" : "  (new)"
        byname[f[2]] += ticks; byname_ns[f[2]] += ns; byname_cs[f[2]] += cs
    }
    total = a - b
    if (total - sum != 0)
        printf "  %-8s %-22s %7d %8.3f%%\n", "-", "(threads that exited)", total - sum, pct(total - sum)
    printf "\nby thread name:\n"
    for (k in byname)
        printf "  %-31s %7d %8.3f%% %8.1fms %9.2f\n", k, byname[k], pct(byname[k]), byname_ns[k] / 1e6, byname_cs[k] / secs
    printf "\nTOTAL: %d ticks (CLK_TCK %d) in %.1f s = %.3f %% of one core (goal ≤ %s %%): %s\n",
        total, hz, secs, pct(total), goal, (pct(total) <= goal) ? "OK" : "OVER"
}'
