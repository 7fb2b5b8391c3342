#!/usr/bin/env bash
# A 525,600-bar SMA backtest end to end through the sandbox's API (submit -> poll -> done) against
# backtesting.py's bt.run() on the same number of bars of the same feed, in one run; prints both
# and the ratio. See benches/README.md.
#
#   benches/backtest_api_bench.sh
#   ROUNDS=8 PY_REPEAT=3 NO_BUILD=1 benches/backtest_api_bench.sh
#   COLD_PAIRS= benches/backtest_api_bench.sh    # only the BTC first job (default: also ETH, SOL)
#   BIN=/path/to/older/agentdesk NO_BUILD=1 benches/backtest_api_bench.sh   # another build
#
# Goal (issue "Sandbox: serve reads in parallel"): >= 100x backtesting.py.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
PY_REPEAT=${PY_REPEAT:-2}
COLD_PAIRS=${COLD_PAIRS-ETH-USD,SOL-USD}
FAST=${FAST:-10}
SLOW=${SLOW:-30}
# A small fee keeps equity from wasting away over ~20,000 trades, so backtesting.py (whole
# fractional units) can still afford every entry and both do the same work.
FEE=${FEE:-0.0001}
POLL_MS=${POLL_MS:-0}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
VENV=target/bench-venv
if [[ ! -x $VENV/bin/python ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import backtesting' 2>/dev/null; then
    "$VENV/bin/pip" install --quiet backtesting
fi
if [[ ${NO_BUILD:-0} != 1 ]]; then
    cargo build --release --quiet --bin agentdesk --example engine_compare
fi
bin=${BIN:-$root/target/release/agentdesk}
gen="$root/target/release/examples/engine_compare"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/agentdesk-bt.XXXXXX")
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# The sandbox's fee is the one backtesting.py is given; no slippage on either side.
cat > "$tmp/config.toml" <<TOML
[sandbox]
discovery_warmup = false
taker_fee_rate = $FEE
slippage_bps = 0
TOML
"$bin" --config "$tmp/config.toml" serve --addr 127.0.0.1:0 --db "$tmp/sandbox.db" > "$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    grep -qo 'http://[0-9.:]*' "$tmp/serve.log" 2>/dev/null && break
    sleep 0.1
done
base=$(grep -o 'http://[0-9.:]*' "$tmp/serve.log" | head -1)
[[ -n $base ]] || { echo "backtest_api_bench: the sandbox did not start" >&2; cat "$tmp/serve.log" >&2; exit 1; }
key=$("$bin" --config "$tmp/config.toml" keys create --db "$tmp/sandbox.db" --scope mcp:mutate)

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$VENV/bin/python" benches/backtest_api_bench.py --base "$base" --key "$key" --bars "$tmp/bars.csv" --gen "$gen" \
    --fast "$FAST" --slow "$SLOW" --fee "$FEE" --rounds "$ROUNDS" --py-repeat "$PY_REPEAT" \
    --poll-ms "$POLL_MS" --cold-pairs "$COLD_PAIRS"
