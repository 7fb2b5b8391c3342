#!/usr/bin/env bash
# The gateway under attack, side by side with nginx in front of the same sandbox (issue #34).
#
# Starts `agentdesk serve`, the gateway in front of it (its default settings: per-key and
# per-address rate limits, per-address connection and in-flight caps), and nginx in front of the
# same sandbox as a keepalive proxy with nginx's defaults (one worker of 512 connections, 60 s
# header timeout) plus `limit_conn` (256 a address) and `limit_req` (50 r/s a address, burst 100,
# 429): what an operator adds to nginx against one noisy address. nginx speaks HTTP/2 (h2c) on a
# port of its own, as nginx 1.22 on a plain port speaks one or the other; the gateway on its one
# port.
#
# Then for each attack (examples/attack_bench.rs: none, flood, slowloris, h2, churn), for each of
# the gateway and nginx, SECONDS of an honest agent's reads (40 a second from 127.0.0.1, its own
# key) and a `/healthz` probe every 250 ms while the attack runs from 127.0.0.2, and prints the
# honest reads' p50, p99 and max, the failed reads, the probes answered, and what the attacker got.
#
# Goal: during every attack, the honest p99 through the gateway under 50 ms, no honest read
# failed, every `/healthz` answered, and the attacker refused (429, 503, 408 or closed).
#
# Needs nginx (apt-get install -y nginx). Environment: SECONDS_EACH (default 10), ATTACKS (default
# "none flood slowloris h2 churn"), NO_BUILD=1 to skip the build.
set -euo pipefail

SECONDS_EACH=${SECONDS_EACH:-10}
ATTACKS=${ATTACKS:-none flood slowloris h2 churn}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v nginx >/dev/null || { echo "attack_bench: nginx is required (apt-get install -y nginx)" >&2; exit 2; }
# 1,100 slow heads and their proxied twins: past the default 1,024 descriptors.
ulimit -n "$(ulimit -Hn)"
[[ $(ulimit -n) == unlimited || $(ulimit -n) -ge 8192 ]] || { echo "attack_bench: needs 8,192 open files (ulimit -n)" >&2; exit 2; }

if [[ ${NO_BUILD:-0} != 1 ]]; then
    cargo build --release --quiet --bin agentdesk --example attack_bench
fi
bin="$root/target/release/agentdesk"
attack="$root/target/release/examples/attack_bench"

source benches/lib.sh
bench_init attack_bench

cat > "$tmp/sandbox.toml" <<TOML
[sandbox]
daily_post_cap = 100000000
discovery_warmup = false
TOML

start "$tmp/serve.log" "$bin" --config "$tmp/sandbox.toml" serve --addr 127.0.0.1:0 --db "$tmp/sandbox.db"
sandbox=$url
start "$tmp/gate.log" "$bin" gate --upstream "$sandbox" --addr 127.0.0.1:0 --db "$tmp/gate.db"
gateway=$url
honest_key=$("$bin" --config "$tmp/sandbox.toml" keys create --db "$tmp/sandbox.db" --scope mcp:mutate)
attacker_key=$("$bin" --config "$tmp/sandbox.toml" keys create --db "$tmp/sandbox.db" --scope mcp:mutate)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
h1_port=$(free_port) h2_port=$(free_port)
mkdir -p "$tmp/nginx"
cat > "$tmp/nginx/nginx.conf" <<CONF
daemon off;
$( [[ $(id -u) == 0 ]] && echo "user root;" )
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log crit;
events { }
http {
    access_log off;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    limit_conn_zone \$binary_remote_addr zone=conns:10m;
    limit_req_zone \$binary_remote_addr zone=reqs:10m rate=50r/s;
    limit_conn conns 256;
    limit_req zone=reqs burst=100 nodelay;
    limit_conn_status 429;
    limit_req_status 429;
    upstream sandbox { server ${sandbox#http://}; keepalive 128; }
    server {
        listen 127.0.0.1:$h1_port;
        listen 127.0.0.1:$h2_port http2;
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
nginx_url="http://127.0.0.1:$h1_port"
for _ in $(seq 50); do
    curl -sf -o /dev/null "$nginx_url/healthz" && break
    sleep 0.1
done
for url in "$gateway" "$nginx_url"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url/api/delegated/positions" -H "x-api-key: $honest_key")
    [[ $code == 200 ]] || { echo "attack_bench: $url answered $code" >&2; exit 1; }
done

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo '+changes'), $(nginx -v 2>&1)"
echo "$SECONDS_EACH s of honest reads (40/s, 127.0.0.1) and /healthz (4/s) during each attack from 127.0.0.2"
echo "attacker answers: status:count (0 = an HTTP/2 stream reset); closed: connections the front closed; refused: connects refused"
printf '%-10s %-8s %7s %6s %8s %8s %9s %8s  %s\n' attack front reads failed p50_ms p99_ms max_ms healthz attacker
fails=0
for a in $ATTACKS; do
    for front in gateway nginx; do
        case $front in
            gateway) base=$gateway h2=$gateway ;;
            nginx) base=$nginx_url h2="http://127.0.0.1:$h2_port" ;;
        esac
        out=$("$attack" "$a" "$base" "$h2" "$honest_key" "$attacker_key" "$SECONDS_EACH" | tr ' ' '\n')
        v() { grep "^$1=" <<<"$out" | cut -d= -f2; }
        printf '%-10s %-8s %7s %6s %8s %8s %9s %8s  %s closed:%s refused:%s%s\n' "$a" "$front" \
            "$(v honest_reads)" "$(v honest_failed)" "$(v honest_p50_ms)" "$(v honest_p99_ms)" "$(v honest_max_ms)" \
            "$(v healthz_ok)/$(v healthz_sent)" "$(v attacker_answers)" "$(v attacker_closed)" "$(v attacker_refused)" \
            "$([[ $a == slowloris ]] && echo " most_open:$(v attacker_most_open)")"
        if [[ $front == gateway ]]; then
            ok=$(awk -v p="$(v honest_p99_ms)" -v f="$(v honest_failed)" -v h="$(v healthz_ok)" -v s="$(v healthz_sent)" \
                -v r="$(v attacker_refusals)" -v c="$(v attacker_closed)" -v a="$a" \
                'BEGIN { print (p + 0 < 50 && f == 0 && h == s && (a == "none" || r + c > 0)) ? 1 : 0 }')
            [[ $ok == 1 ]] || { fails=$((fails + 1)); echo "           ^ the gateway missed the goal here"; }
        fi
        # The attacker's sockets are gone when the example exits; the fronts settle before the next.
        sleep 2
    done
done
echo
if ((fails == 0)); then
    echo "goal (gateway: honest p99 < 50 ms, no read failed, every /healthz answered, the attacker refused): PASS"
else
    echo "goal (gateway: honest p99 < 50 ms, no read failed, every /healthz answered, the attacker refused): FAIL in $fails attack(s)"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
