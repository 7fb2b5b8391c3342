# A throwaway PostgreSQL server for the gateway's tests and bench: sourced, then `pg_up`.
# Installs Debian's postgresql if missing, runs initdb in a temporary directory as the postgres
# user (initdb refuses root), listens on 127.0.0.1 on a free port with its socket in that
# directory, creates a database and exports AGENTDESK_TEST_PG. `pg_down` stops it and removes
# the directory; callers trap it on EXIT.
#
# PG_DURABLE=1 keeps fsync on (the bench compares it with SQLite at synchronous=FULL); the tests
# run without it, since a crashed test server is thrown away anyway.

pg_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    return 1
}

pg_up() {
    if ! pg_bin >/dev/null; then
        echo "installing postgresql (Debian package)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    local bin
    bin=$(pg_bin) || { echo "postgresql did not install: no initdb under /usr/lib/postgresql" >&2; return 1; }
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
    PG_DIR=$(mktemp -d /tmp/agentdesk-pg.XXXXXX)
    chown postgres "$PG_DIR"
    chmod 700 "$PG_DIR"
    local as_pg=(runuser -u postgres --)
    [ "$(id -u)" = "$(id -u postgres)" ] && as_pg=()
    "${as_pg[@]}" "$bin/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
    # A port nothing listens on; the server fails to start if one is taken between here and there.
    local port tries=0
    while :; do
        port=$((20000 + RANDOM % 30000))
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
        tries=$((tries + 1))
        [ $tries -lt 50 ] || { echo "no free port for postgresql" >&2; return 1; }
    done
    # TLS with a certificate made here (a CA and the server's, for 127.0.0.1 and localhost), so
    # the tests can connect with sslmode=verify-full as a managed PostgreSQL is reached.
    pg_certs "$PG_DIR"
    local opts="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$PG_DIR -c max_connections=400"
    opts="$opts -c ssl=on -c ssl_cert_file=$PG_DIR/server.crt -c ssl_key_file=$PG_DIR/server.key"
    if [ "${PG_DURABLE:-0}" != 1 ]; then
        opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    fi
    "${as_pg[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -o "$opts" -w -t 60 start >/dev/null ||
        { cat "$PG_DIR/log" >&2; return 1; }
    PG_BIN=$bin
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres agentdesk_test
    export AGENTDESK_TEST_PG="postgres://postgres@127.0.0.1:$port/agentdesk_test"
    export AGENTDESK_TEST_PG_TLS="$AGENTDESK_TEST_PG?sslmode=verify-full&sslrootcert=$PG_DIR/ca.crt"
    echo "postgresql $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($PG_DIR)" >&2
}

pg_certs() {
    local d=$1
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=agentdesk-test-ca \
        -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
        -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$d/san.ext"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 2 -extfile "$d/san.ext" -out "$d/server.crt" 2>/dev/null
    chown postgres "$d/server.key" "$d/server.crt"
    chmod 600 "$d/server.key"
    chmod 644 "$d/ca.crt"
}

pg_down() {
    [ -n "${PG_DIR:-}" ] || return 0
    if [ -n "${PG_BIN:-}" ]; then
        local as_pg=(runuser -u postgres --)
        [ "$(id -u)" = "$(id -u postgres)" ] && as_pg=()
        "${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$PG_DIR"
    PG_DIR=
}
