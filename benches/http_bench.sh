#!/usr/bin/env bash
# The sandbox's HTTP throughput, side by side with an axum hello-world in the same run.
#
# Builds release, starts `agentdesk serve` on a fresh database and `examples/hello_world.rs`, then
# alternates wrk runs (ROUNDS times, -t2 -c64 -d$DURATION) against the hello-world and against
# GET /api/delegated/positions, and prints req/s and p99 of each and the sandbox's share. Then
# pnl_summary at c=16 with 10 fills and again after FILLS more fills (placed through
# POST /api/v1/trades), and the ratio.
#
# Goals (issue "Sandbox: serve reads in parallel"): positions ≥ 40 % of hello-world's req/s with
# p99 ≤ 5 ms; pnl_summary with 10,000 fills ≥ 80 % of its rate with 10.
#
# Needs wrk (apt-get install wrk) and python3. Environment: ROUNDS (default 3), DURATION (s,
# default 8), FILLS (default 10000), NO_BUILD=1 to skip `cargo build`.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8}
FILLS=${FILLS:-10000}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v wrk >/dev/null || { echo "http_bench: wrk is required (apt-get install wrk)" >&2; exit 2; }

if [[ ${NO_BUILD:-0} != 1 ]]; then
    cargo build --release --quiet --bin agentdesk --example hello_world
fi
bin="$root/target/release/agentdesk"
hello="$root/target/release/examples/hello_world"

source benches/lib.sh
bench_init http_bench

cat > "$tmp/config.toml" <<TOML
[sandbox]
daily_post_cap = 1000000
discovery_warmup = false
TOML

# Each server prints "listening on http://ADDR" once it accepts connections.
start "$tmp/serve.log" "$bin" --config "$tmp/config.toml" serve --addr 127.0.0.1:0 --db "$tmp/sandbox.db"
sandbox=$url
start "$tmp/hello.log" "$hello" 127.0.0.1:0
peer=$url
read_key=$("$bin" --config "$tmp/config.toml" keys create --db "$tmp/sandbox.db" --scope mcp:mutate)
trade_key=$("$bin" --config "$tmp/config.toml" keys create --db "$tmp/sandbox.db" --scope webhook:alerts)

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"

# Prints "req/s p99_ms" of one wrk run.
measure() {
    local conns=$1 url=$2
    shift 2
    wrk -t2 -c"$conns" -d"${DURATION}s" --latency "$@" "$url" | awk '
        /Requests\/sec/ { rps = $2 }
        $1 == "99%" { v = $2; ms = v + 0
            if (v ~ /us$/) ms = ms / 1000; else if (v ~ /ms$/) ms = ms; else if (v ~ /s$/) ms = ms * 1000
            p99 = ms }
        END { printf "%.0f %.2f\n", rps, p99 }'
}

# POSTs n market trades of 0.001 BTC, alternating long and short, on one keep-alive connection.
trades() {
    python3 - "$sandbox" "$trade_key" "$1" <<'PY'
import http.client, json, sys, urllib.parse
base, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
u = urllib.parse.urlparse(base)
conn = http.client.HTTPConnection(u.hostname, u.port)
for i in range(n):
    body = json.dumps({"strategy": "bench", "a": "BTC", "d": "long" if i % 2 == 0 else "short",
                       "o": "market", "size": "0.001", "fanout": False})
    conn.request("POST", "/api/v1/trades", body, {"x-api-key": key, "content-type": "application/json",
                                                  "x-requested-with": "XMLHttpRequest"})
    r = conn.getresponse(); data = r.read()
    if r.status != 200:
        sys.exit(f"trade {i}: {r.status} {data[:200]!r}")
PY
}

echo
echo "GET /api/delegated/positions vs hello-world, c=64, ${DURATION}s each, alternating"
printf '%-6s %12s %9s %12s %9s %7s\n' round hello_rps p99_ms sandbox_rps p99_ms share
sum_share=0
for r in $(seq "$ROUNDS"); do
    read -r h_rps h_p99 < <(measure 64 "$peer/")
    read -r s_rps s_p99 < <(measure 64 "$sandbox/api/delegated/positions" -H "x-api-key: $read_key")
    share=$(awk -v s="$s_rps" -v h="$h_rps" 'BEGIN { printf "%.1f", 100 * s / h }')
    sum_share=$(awk -v a="$sum_share" -v b="$share" 'BEGIN { print a + b }')
    printf '%-6s %12s %9s %12s %9s %6s%%\n' "$r" "$h_rps" "$h_p99" "$s_rps" "$s_p99" "$share"
done
echo "mean share: $(awk -v a="$sum_share" -v n="$ROUNDS" 'BEGIN { printf "%.1f", a / n }') % (goal ≥ 40 %, p99 ≤ 5 ms)"

echo
echo "GET /api/delegated/pnl/summary, c=16, ${DURATION}s"
trades 10
read -r few_rps few_p99 < <(measure 16 "$sandbox/api/delegated/pnl/summary" -H "x-api-key: $read_key")
echo "with 10 fills:      $few_rps req/s, p99 $few_p99 ms"
start_s=$(date +%s.%N)
trades "$FILLS"
end_s=$(date +%s.%N)
echo "($FILLS more fills placed in $(awk -v a="$start_s" -v b="$end_s" 'BEGIN { printf "%.1f", b - a }') s)"
read -r many_rps many_p99 < <(measure 16 "$sandbox/api/delegated/pnl/summary" -H "x-api-key: $read_key")
echo "with $((FILLS + 10)) fills: $many_rps req/s, p99 $many_p99 ms"
echo "ratio: $(awk -v a="$many_rps" -v b="$few_rps" 'BEGIN { printf "%.1f", 100 * a / b }') % (goal ≥ 80 %)"
