#!/usr/bin/env bash
# Wall time of the engine's optimizer: 1,000 SMA-cross combinations over 8,640
# five-minute bars (30 days) on 2 threads, measured by the criterion bench in
# benches/engine.rs (`optimizer/grid1000_x_8640_2threads`). Goal: <= 0.15 s.
#
#   benches/optimizer_bench.sh                 # 2 threads
#   THREADS='1 2' benches/optimizer_bench.sh   # also the 1-thread variant
#   NO_BUILD=1 benches/optimizer_bench.sh      # reuse the last-built bench binary
set -euo pipefail

cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
GOAL_S=0.15
regex="^optimizer/grid1000_x_8640_($(echo $THREADS | tr ' ' '|'))threads\$"

if [[ -z ${NO_BUILD:-} ]]; then
    cargo bench --bench engine -- "$regex" >&2
else
    bin=$(ls -t target/release/deps/engine-* | grep -v '\.d$' | head -n 1)
    "$bin" --bench "$regex" >&2
fi

status=0
for t in $THREADS; do
    est=target/criterion/optimizer/grid1000_x_8640_${t}threads/new/estimates.json
    python3 - "$est" "$t" "$GOAL_S" <<'PY' || status=1
import json, sys
est, threads, goal = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3])
med = est["median"]["point_estimate"] / 1e9
lo = est["median"]["confidence_interval"]["lower_bound"] / 1e9
hi = est["median"]["confidence_interval"]["upper_bound"] / 1e9
mean = est["mean"]["point_estimate"] / 1e9
slope = (est.get("slope") or {}).get("point_estimate")
extra = f", slope {slope / 1e9:.4f} s" if slope else ""
ok = med <= goal or threads != "2"
print(f"{'PASS' if ok else 'FAIL'} optimizer grid 1000 x 8640 bars, {threads} thread(s):"
      f" median {med:.4f} s (95% CI {lo:.4f}-{hi:.4f}), mean {mean:.4f} s{extra}"
      f" = {1000 * 8640 / med / 1e6:.0f} M bar-evaluations/s (goal <= {goal} s on 2 threads)")
sys.exit(0 if ok else 1)
PY
done
exit $status
