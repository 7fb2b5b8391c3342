#!/usr/bin/env bash
# The gateway's cost, side by side in one run (issues #22 and #34): the sandbox direct, the gateway in front
# of it, and nginx as a plain keepalive proxy (one worker, as the gateway is one process) in front
# of the same sandbox; then approval → execution through the gateway on SQLite and PostgreSQL,
# and the supervisor's inbox at scale.
#
# 1. GET /api/delegated/positions with an agent key, wrk at 1, 16 and 64 connections, ROUNDS
#    rounds alternating direct / gateway / nginx (each warmed for WARMUP s first; the order
#    reversed every other round). Per run: req/s, p50, p99 and CPU per request of the process in
#    the path (utime + stime from /proc: the sandbox for direct, the gateway alone for gateway,
#    nginx's worker for nginx). Medians over the rounds, the ratios, and PASS/FAIL:
#      throughput: gateway ≥ 0.9 × nginx at 16 and 64 connections (the median of each round's own
#      gateway/nginx ratio: runs seconds apart share the machine's load, runs minutes apart do not);
#      p99 at 16 connections: gateway ≤ direct + 1 ms (the median of each round's own gateway −
#      direct p99);
#      median at 1 connection: what the gateway adds ≤ what nginx adds + 20 µs (the median of each round's
#      own gateway − nginx p50: the direct run is the same for both, and a host's slow seconds,
#      which raise a run's CPU per request by half for either proxy, land in one round's pair).
# 2. Approval → execution (examples/gateway_bench.rs approval): APPROVALS proposals staged, approved
#    one at a time (after 100 more, not measured); from the approve sent to the upstream
#    receiving the confirm, p99 ≤ 5 ms, and where the time goes (the approve's way in, the
#    store's reads, the rules, the commit with its journal, the way out to the upstream), on
#    SQLite and on a throwaway PostgreSQL (.ci/postgres.sh; skipped with a message when it cannot
#    start).
# 3. The inbox at scale (examples/gateway_bench.rs inbox): AGENTS agents with INBOX pending items
#    between them on the gateway process; p99 of GET /gate/v1/inbox ≤ 10 ms; the gateway's RSS
#    (VmRSS and peak VmHWM) < 100 MB. The console's frame with 10,000 items is the criterion case
#    `proposals/10k gateway inbox` of `cargo bench --bench render`.
# 4. The pre-trade controls' cost (examples/gateway_bench.rs staging, issue #36): STAGINGS proposals
#    staged one at a time through an in-process gateway with no policy, and as many with every
#    control set (each reading what it measures against), in alternating rounds; p99 of a
#    staging with every control ≤ p99 with none + 2 ms.
#
# Needs wrk and nginx (apt-get install -y nginx wrk). Environment: ROUNDS (default 8, even: see
# the order; fewer leave the goals to the machine's noise, benches/HISTORY.md), DURATION (s,
# default 6), WARMUP (s, default 5), APPROVALS (default 1000: a p99 is
# then the tenth slowest, not the second), AGENTS (100), INBOX (10000), NO_BUILD=1 to skip the
# build, NO_PG=1 to skip PostgreSQL, BIN_DIR=DIR to run the agentdesk and gateway_bench in DIR (another
# build, for a before and after), ONLY=inbox (or forward, approval, staging; comma-separated) to run only those
# phases (wrk and nginx are needed only for forward).
set -euo pipefail

ROUNDS=${ROUNDS:-8}
DURATION=${DURATION:-6}
WARMUP=${WARMUP:-5}
APPROVALS=${APPROVALS:-1000}
STAGINGS=${STAGINGS:-1000}
AGENTS=${AGENTS:-100}
INBOX=${INBOX:-10000}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# The phases ONLY names (forward, approval, inbox, staging; comma-separated), every one when it is unset.
want() { [[ -z ${ONLY:-} || ",$ONLY," == *",$1,"* ]]; }
missing=()
if want forward; then
    command -v wrk >/dev/null || missing+=(wrk)
    command -v nginx >/dev/null || missing+=(nginx)
fi
if ((${#missing[@]})); then
    echo "gateway_bench: ${missing[*]} not installed: apt-get install -y nginx wrk" >&2
    exit 2
fi

if [[ ${NO_BUILD:-0} != 1 ]]; then
    cargo build --release --quiet --bin agentdesk --example gateway_bench
fi
# BIN_DIR: another build's agentdesk and gateway_bench side by side (a before, copied aside).
bin="${BIN_DIR:-$root/target/release}/agentdesk"
bench="${BIN_DIR:-$root/target/release/examples}/gateway_bench"

source benches/lib.sh
bench_init gateway_bench
bench_cleanup_more() { if declare -F pg_down >/dev/null; then pg_down; fi; }

cat > "$tmp/sandbox.toml" <<TOML
[sandbox]
daily_post_cap = 100000000
discovery_warmup = false
TOML
# The per-caller limit stays on (its cost is in every request) but above what wrk sends.
cat > "$tmp/gate.toml" <<TOML
[gate]
rate_limit_per_second = 1000000
rate_limit_burst = 1000000
TOML

verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 <= b + 0 ? "PASS" : "FAIL") }'; }
start "$tmp/serve.log" "$bin" --config "$tmp/sandbox.toml" serve --addr 127.0.0.1:0 --db "$tmp/sandbox.db"
sandbox=$url sandbox_pid=$pid
start "$tmp/gate.log" "$bin" --config "$tmp/gate.toml" gate --upstream "$sandbox" --addr 127.0.0.1:0 --db "$tmp/gate.db"
gateway=$url gateway_pid=$pid
key=$("$bin" --config "$tmp/sandbox.toml" keys create --db "$tmp/sandbox.db" --scope mcp:mutate)

if want forward; then
nginx_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/nginx"
cat > "$tmp/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
$( [[ $(id -u) == 0 ]] && echo "user root;" )
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    upstream sandbox { server ${sandbox#http://}; keepalive 128; }
    server {
        listen 127.0.0.1:$nginx_port;
        location / {
            proxy_pass http://sandbox;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF
nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" 2>"$tmp/nginx/stderr" &
pids+=($!)
nginx_url="http://127.0.0.1:$nginx_port"
for _ in $(seq 50); do
    curl -sf -o /dev/null "$nginx_url/api/delegated/positions" -H "x-api-key: $key" && break
    sleep 0.1
done
nginx_worker=$(pgrep -P "$(cat "$tmp/nginx/nginx.pid")" | head -1)
path=/api/delegated/positions
for url in "$sandbox" "$gateway" "$nginx_url"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url$path" -H "x-api-key: $key")
    [[ $code == 200 ]] || { echo "gateway_bench: $url$path answered $code" >&2; exit 1; }
done

fi
clk=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo '+changes')"
if want forward; then

# Prints "req/s p50_ms p99_ms cpu_us_per_request" of one wrk run; $1 the pid whose CPU counts.
measure() {
    local pid=$1 conns=$2 url=$3 threads=2 before after out
    [[ $conns -lt 2 ]] && threads=1
    before=$(ticks "$pid")
    out=$(wrk -t"$threads" -c"$conns" -d"${DURATION}s" --latency -H "x-api-key: $key" "$url")
    after=$(ticks "$pid")
    awk -v t=$((after - before)) -v clk="$clk" '
        function ms(v) { x = v + 0; if (v ~ /us$/) return x / 1000; if (v ~ /ms$/) return x; if (v ~ /s$/) return x * 1000; return x }
        /requests in/ { n = $1 }
        /Requests\/sec/ { rps = $2 }
        $1 == "50%" { p50 = ms($2) }
        $1 == "99%" { p99 = ms($2) }
        END { printf "%.0f %.3f %.3f %.1f\n", rps, p50, p99, (n > 0 ? t / clk / n * 1e6 : 0) }' <<<"$out"
}

# The middle value, or the mean of the two middle ones when there is an even number of them.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

declare -A R
echo
echo "GET $path with an agent key, ${DURATION}s runs after a ${WARMUP}s warm-up of each, $ROUNDS rounds of direct / gateway / nginx, the order reversed every other round"
printf '%-5s %-3s %-8s %10s %9s %9s %12s\n' conns rnd target req/s p50_ms p99_ms cpu_us/req
# Each server's first seconds under load are slower than the rest (its allocator's arenas, the
# store's pages, the runtime's threads): every target is warmed before anything is measured, so
# that the first measured is not the one that paid for it.
for t in direct gateway nginx; do
    case $t in
        direct) url=$sandbox ;;
        gateway) url=$gateway ;;
        nginx) url=$nginx_url ;;
    esac
    wrk -t2 -c16 -d"${WARMUP}s" -H "x-api-key: $key" "$url$path" >/dev/null
done
targets=(direct gateway nginx)
for c in 1 16 64; do
    for r in $(seq "$ROUNDS"); do
        # The order is reversed every other round (direct, gateway, nginx; then nginx, gateway,
        # direct): a machine that speeds up or slows down during a run favours none of them, as
        # each runs before the others as often as after them.
        for i in 0 1 2; do
            ((r % 2)) && t=${targets[$i]} || t=${targets[$((2 - i))]}
            case $t in
                direct) pid=$sandbox_pid url=$sandbox ;;
                gateway) pid=$gateway_pid url=$gateway ;;
                nginx) pid=$nginx_worker url=$nginx_url ;;
            esac
            read -r rps p50 p99 cpu < <(measure "$pid" "$c" "$url$path")
            printf '%-5s %-3s %-8s %10s %9s %9s %12s\n' "$c" "$r" "$t" "$rps" "$p50" "$p99" "$cpu"
            R[$c,$t,rps]+="$rps "; R[$c,$t,p50]+="$p50 "; R[$c,$t,p99]+="$p99 "; R[$c,$t,cpu]+="$cpu "
            declare "rps_$t=$rps" "p50_$t=$p50" "p99_$t=$p99"
        done
        # The round's own ratio: its three runs share the machine's state of those seconds.
        R[$c,pair]+="$(awk -v a="$rps_gateway" -v b="$rps_nginx" 'BEGIN { printf "%.3f", a / b }') "
        R[$c,p50_gn]+="$(awk -v a="$p50_gateway" -v b="$p50_nginx" 'BEGIN { printf "%.0f", (a - b) * 1000 }') "
        R[$c,p99_gd]+="$(awk -v a="$p99_gateway" -v b="$p99_direct" 'BEGIN { printf "%.3f", a - b }') "
    done
done

m() { tr ' ' '\n' <<<"${R[$1]}" | grep . | median; }
sorted() { tr ' ' '\n' <<<"${R[$1]}" | grep . | sort -g | paste -sd' '; }
echo
echo "medians of $ROUNDS rounds"
printf '%-5s %-8s %10s %9s %9s %12s\n' conns target req/s p50_ms p99_ms cpu_us/req
for c in 1 16 64; do
    for t in direct gateway nginx; do
        printf '%-5s %-8s %10s %9s %9s %12s\n' "$c" "$t" "$(m "$c,$t,rps")" "$(m "$c,$t,p50")" "$(m "$c,$t,p99")" "$(m "$c,$t,cpu")"
    done
done
echo
echo "goals"
for c in 16 64; do
    g=$(m "$c,gateway,rps") n=$(m "$c,nginx,rps") d=$(m "$c,direct,rps")
    pair=$(m "$c,pair")
    printf 'c=%-3s throughput gateway/nginx %.2f, median of the rounds'"'"' own ratios (%s) (of the medians %.2f; gateway/direct %.2f, nginx/direct %.2f), goal ≥ 0.90: %s\n' \
        "$c" "$pair" "$(sorted "$c,pair")" \
        "$(awk -v a="$g" -v b="$n" 'BEGIN { print a / b }')" "$(awk -v a="$g" -v b="$d" 'BEGIN { print a / b }')" \
        "$(awk -v a="$n" -v b="$d" 'BEGIN { print a / b }')" "$(verdict 0.9 "$pair")"
done
gp=$(m "16,gateway,p99") dp=$(m "16,direct,p99") np=$(m "16,nginx,p99") gd=$(m "16,p99_gd")
printf 'c=16 p99: gateway − direct %+.3f ms, median of the rounds'"'"' own (%s) (of the medians: gateway %.3f ms, direct %.3f ms (%+.3f), nginx %.3f ms (%+.3f)), goal ≤ +1 ms: %s\n' \
    "$gd" "$(sorted 16,p99_gd)" "$gp" "$dp" "$(awk -v a="$gp" -v b="$dp" 'BEGIN { print a - b }')" "$np" \
    "$(awk -v a="$np" -v b="$dp" 'BEGIN { print a - b }')" "$(verdict "$gd" 1)"
g1=$(awk -v a="$(m "1,gateway,p50")" -v b="$(m "1,direct,p50")" 'BEGIN { print (a - b) * 1000 }')
n1=$(awk -v a="$(m "1,nginx,p50")" -v b="$(m "1,direct,p50")" 'BEGIN { print (a - b) * 1000 }')
gn=$(m "1,p50_gn")
printf 'c=1 median: gateway − nginx %+.0f µs, median of the rounds'"'"' own (%s) (of the medians: gateway adds %+.0f µs, nginx %+.0f µs), goal ≤ +20 µs: %s\n' \
    "$gn" "$(sorted 1,p50_gn)" "$g1" "$n1" "$(verdict "$gn" 20)"
for c in 1 16 64; do
    printf 'c=%-3s CPU per request: gateway %s µs, nginx %s µs (ratio %.2f), sandbox direct %s µs\n' "$c" \
        "$(m "$c,gateway,cpu")" "$(m "$c,nginx,cpu")" \
        "$(awk -v a="$(m "$c,gateway,cpu")" -v b="$(m "$c,nginx,cpu")" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$(m "$c,direct,cpu")"
done

fi
if want approval; then
echo
echo "approval → execution, $APPROVALS approvals one at a time (from the approve sent to the upstream receiving the confirm)"
approvals() {
    local out
    out=$("$bench" approval "$sandbox" "$key" "$1" "$APPROVALS" | tr ' ' '\n')
    local p99 p50
    p50=$(grep "^approve_to_confirm_.*_p50_ms=" <<<"$out" | cut -d= -f2)
    p99=$(grep "^approve_to_confirm_.*_p99_ms=" <<<"$out" | cut -d= -f2)
    printf '%-10s p50 %s ms, p99 %s ms, max %s ms (approve answered: p99 %s ms), goal p99 ≤ 5 ms: %s\n' "$2" "$p50" "$p99" \
        "$(grep "^approve_to_confirm_.*_max_ms=" <<<"$out" | cut -d= -f2)" \
        "$(grep "^approve_answered_.*_p99_ms=" <<<"$out" | cut -d= -f2)" "$(verdict "$p99" 5)"
    # Where the time goes (the gateway's "approved" line): p50 / p99 of each part, in ms.
    local parts=""
    for part in in read rules commit out; do
        parts+="$part $(grep "^approval_${part}_.*_p50_ms=" <<<"$out" | cut -d= -f2)/$(grep "^approval_${part}_.*_p99_ms=" <<<"$out" | cut -d= -f2)  "
    done
    printf '%-10s   where (p50/p99 ms): %s\n' "" "$parts"
}
approvals sqlite SQLite
if [[ ${NO_PG:-0} == 1 ]]; then
    echo "PostgreSQL    skipped (NO_PG=1)"
elif source .ci/postgres.sh && PG_DURABLE=1 pg_up 2>"$tmp/pg.log"; then
    approvals "$AGENTDESK_TEST_PG" PostgreSQL
else
    echo "PostgreSQL    skipped: a throwaway server did not start ($(tail -1 "$tmp/pg.log" 2>/dev/null))"
fi
fi

if want staging; then
echo
echo "staging with every pre-trade control vs none, $STAGINGS each, one at a time (SQLite)"
out=$("$bench" staging "$sandbox" "$key" "$STAGINGS" | tr ' ' '\n')
v() { grep "^$1=" <<<"$out" | cut -d= -f2; }
printf 'no policy      p50 %s ms, p99 %s ms, max %s ms\n' "$(v staging_none_p50_ms)" "$(v staging_none_p99_ms)" "$(v staging_none_max_ms)"
printf 'every control  p50 %s ms, p99 %s ms, max %s ms\n' "$(v staging_every_control_p50_ms)" "$(v staging_every_control_p99_ms)" "$(v staging_every_control_max_ms)"
printf 'p99 difference %s ms, goal ≤ 2 ms: %s\n' "$(v staging_p99_diff_ms)" "$(verdict "$(v staging_p99_diff_ms)" 2)"
fi

if want inbox; then
echo
echo "inbox at scale: $AGENTS agents, $INBOX pending items, on the gateway process (SQLite)"
for _ in $(seq "$AGENTS"); do
    "$bin" --config "$tmp/sandbox.toml" keys create --db "$tmp/sandbox.db" --scope mcp:mutate
done > "$tmp/agents.keys"
rss() { awk -v f="$2" '$1 == f":" { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
echo "gateway before: VmRSS $(rss "$gateway_pid" VmRSS) MB, VmHWM $(rss "$gateway_pid" VmHWM) MB (after the phases before)"
out=$("$bench" inbox "$gateway" "$tmp/gate.db" "$tmp/agents.keys" "$INBOX" | tr ' ' '\n')
v() { grep "^$1=" <<<"$out" | cut -d= -f2; }
echo "seeded $(v inbox_pending) pending items for $(v inbox_agents) agents in $(v inbox_seed_s) s"
for q in all pending; do
    printf 'GET /gate/v1/inbox?status=%-8s %s items (%s bytes) listed, p50 %s ms, p99 %s ms, max %s ms, goal p99 ≤ 10 ms: %s\n' "$q" \
        "$(v inbox_${q}_listed)" "$(v inbox_${q}_bytes)" "$(v inbox_${q}_p50_ms)" "$(v inbox_${q}_p99_ms)" "$(v inbox_${q}_max_ms)" "$(verdict "$(v inbox_${q}_p99_ms)" 10)"
done
printf 'GET /gate/v1/inbox?status=all&since=OLD&wait=25 (answered at once), p50 %s ms, p99 %s ms, max %s ms, goal p99 ≤ 10 ms: %s\n' \
    "$(v inbox_poll_behind_p50_ms)" "$(v inbox_poll_behind_p99_ms)" "$(v inbox_poll_behind_max_ms)" "$(verdict "$(v inbox_poll_behind_p99_ms)" 10)"
printf 'GET /gate/v1/inbox?status=all&since=NOW&wait=25 held until a reject: answered p50 %s ms, p99 %s ms after the reject was sent (the reject answered: p50 %s ms, p99 %s ms)\n' \
    "$(v inbox_poll_held_p50_ms)" "$(v inbox_poll_held_p99_ms)" "$(v inbox_poll_decision_p50_ms)" "$(v inbox_poll_decision_p99_ms)"
rss_now=$(rss "$gateway_pid" VmRSS) hwm=$(rss "$gateway_pid" VmHWM)
echo "gateway memory: VmRSS $rss_now MB, peak VmHWM $hwm MB, goal < 100 MB: $(verdict "$hwm" 99.999)"
echo "console frame with 10,000 items: cargo bench --bench render -- 'proposals/10k'"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
