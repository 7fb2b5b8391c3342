#!/usr/bin/env bash
# Cross-check the engine's sma_cross against backtesting.py on identical bars,
# then compare their speed on 100k bars. See benches/README.md.
#
#   benches/backtesting_py_compare.sh            # 10k-bar check + 100k-bar speed
#   CHECK_BARS=20000 SPEED_BARS=0 benches/backtesting_py_compare.sh   # no speed run
#   FAST=20 SLOW=50 FEE=0.0005 NO_BUILD=1 benches/backtesting_py_compare.sh
set -euo pipefail

cd "$(dirname "$0")/.."
CHECK_BARS=${CHECK_BARS:-10000}
SPEED_BARS=${SPEED_BARS:-100000}
FAST=${FAST:-10}
SLOW=${SLOW:-30}
FEE=${FEE:-0.001}
PY_REPEAT=${PY_REPEAT:-3}
ENGINE_REPEAT=${ENGINE_REPEAT:-300}
VENV=target/bench-venv
DATA=target/bench-data
EXE=target/release/examples/engine_compare

if [[ ! -x $VENV/bin/python ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import backtesting' 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --upgrade pip
    # pandas, numpy and bokeh come in as backtesting's dependencies.
    "$VENV/bin/pip" install --quiet backtesting
fi

if [[ -z ${NO_BUILD:-} ]]; then
    cargo build --release --example engine_compare
fi

mkdir -p "$DATA"
args=(--engine "$EXE" --fast "$FAST" --slow "$SLOW" --fee "$FEE"
      --py-repeat "$PY_REPEAT" --engine-repeat "$ENGINE_REPEAT")
check_csv=$DATA/btc5m_${CHECK_BARS}.csv
"$EXE" --generate "$CHECK_BARS" "$check_csv"
args+=(--check "$check_csv")
if [[ $SPEED_BARS -gt 0 ]]; then
    speed_csv=$DATA/btc5m_${SPEED_BARS}.csv
    "$EXE" --generate "$SPEED_BARS" "$speed_csv"
    args+=(--speed "$speed_csv")
fi

exec "$VENV/bin/python" benches/backtesting_py_compare.py "${args[@]}"
