#!/usr/bin/env bash
# Wall time of the engine's optimizer: SMA-cross combinations over 8,640 five-minute bars
# (30 days), measured by the criterion benches in benches/engine.rs
# (`optimizer/grid{1000,10000}_x_8640_{1,2}threads`). Goals on 2 threads: 1,000 combinations
# <= 0.15 s, 10,000 combinations <= 0.3 s (issue 22).
#
#   benches/optimizer_bench.sh                   # both grids, 2 threads
#   THREADS='1 2' benches/optimizer_bench.sh     # also the 1-thread variants
#   SIZES=10000 benches/optimizer_bench.sh       # only the 10,000-combination grid
#   NO_BUILD=1 benches/optimizer_bench.sh        # reuse the last-built bench binary
set -euo pipefail

cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
SIZES=${SIZES:-1000 10000}
regex="^optimizer/grid($(echo $SIZES | tr ' ' '|'))_x_8640_($(echo $THREADS | tr ' ' '|'))threads\$"

if [[ -z ${NO_BUILD:-} ]]; then
    cargo bench --bench engine -- "$regex" >&2
else
    bin=$(ls -t target/release/deps/engine-* | grep -v '\.d$' | head -n 1)
    "$bin" --bench "$regex" >&2
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for size in $SIZES; do
    case $size in
        1000) goal=0.15 ;;
        10000) goal=0.3 ;;
        *) goal= ;;
    esac
    for t in $THREADS; do
        est=target/criterion/optimizer/grid${size}_x_8640_${t}threads/new/estimates.json
        python3 - "$est" "$size" "$t" "$goal" <<'PY' || status=1
import json, sys
est, size, threads, goal = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3], sys.argv[4]
med = est["median"]["point_estimate"] / 1e9
lo = est["median"]["confidence_interval"]["lower_bound"] / 1e9
hi = est["median"]["confidence_interval"]["upper_bound"] / 1e9
mean = est["mean"]["point_estimate"] / 1e9
slope = (est.get("slope") or {}).get("point_estimate")
extra = f", slope {slope / 1e9:.4f} s" if slope else ""
judged = goal and threads == "2"
ok = not judged or med <= float(goal)
verdict = ("PASS" if ok else "FAIL") if judged else "INFO"
print(f"{verdict} optimizer grid {size} x 8640 bars, {threads} thread(s):"
      f" median {med:.4f} s (95% CI {lo:.4f}-{hi:.4f}), mean {mean:.4f} s{extra}"
      f" = {size * 8640 / med / 1e6:.0f} M bar-evaluations/s"
      + (f" (goal <= {goal} s on 2 threads)" if goal else ""))
sys.exit(0 if ok else 1)
PY
    done
done
exit $status
