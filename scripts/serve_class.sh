#!/usr/bin/env bash
# Serve a class: N replicas of the app on loopback ports behind HAProxy on PORT.
#
#   bash scripts/serve_class.sh N PORT [ADDRESS]
#
# ADDRESS is where HAProxy listens (default 0.0.0.0, every interface, so students reach
# it; 127.0.0.1 keeps it on this machine). The replicas listen on 127.0.0.1 only.
# Runs in the foreground; Ctrl-C or SIGTERM stops everything it started.
#
# - Stickiness by cookie: HAProxy inserts `ae_replica` naming the replica, so one
#   browser's page, WebSocket and uploads reach one replica even when a whole lecture
#   hall shares one NAT address (which an address hash would send to one replica).
# - One cookie secret for every replica (XSRF tokens signed by one replica must check on
#   another), generated on the first start and kept outside the repository, in
#   ${XDG_STATE_HOME:-~/.local/state}/attention-explorer/cookie_secret (mode 600); passed
#   in the environment, which `ps` does not show to other users (a command line it does).
# - Health checks on /_stcore/health; a dead replica's sessions go to a live one
#   (option redispatch): they reconnect there by themselves and run again from their
#   link, so each keeps its view (README, "Serving a class").
# - Headers Streamlit cannot set itself: Content-Security-Policy, X-Content-Type-Options,
#   Referrer-Policy. EMBED_ORIGINS="https://course.example.edu ..." lets those origins
#   frame the app (frame-ancestors); by default only the app itself may.
# - AE_ACCESS_LOG=1 prints one line per request (client, replica, status, method, path,
#   user agent) from HAProxy.
# - The CPUs shared among the replicas: each replica's engine computes a pass on
#   CPUs / N threads (at least 1; ATTENTION_EXPLORER_THREADS, app/data/threads.py), so
#   that N busy replicas never ask for more threads than there are CPUs
#   (docs/decisions.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/sbin:/sbin  # where Debian puts haproxy; a user's PATH may lack it

usage() {
    echo "usage: bash scripts/serve_class.sh N PORT [ADDRESS]  (N replicas, 1-32; HAProxy on PORT)" >&2
    exit 2
}
[[ $# -ge 2 && $# -le 3 && $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]] || usage
replicas=$1 port=$2 address=${3:-0.0.0.0}
((replicas >= 1 && replicas <= 32 && port >= 1 && port <= 65535)) || usage

# where_to_open ADDRESS PORT: the addresses that reach HAProxy when it listens on ADDRESS.
where_to_open() {
    case $1 in
        0.0.0.0 | "::")
            echo "open http://localhost:$2/ (students: this machine's address, port $2)" ;;
        127.* | localhost | "::1")
            echo "open http://localhost:$2/ on this machine only: HAProxy listens on $1, which" \
                "no other machine reaches (for students, start it with ADDRESS 0.0.0.0 or this" \
                "machine's network address)" ;;
        *:*)
            echo "open http://[$1]:$2/ (students too; on this machine, localhost does not answer)" ;;
        *)
            echo "open http://$1:$2/ (students too; on this machine, localhost does not answer)" ;;
    esac
}

# The app's Python: the one run.sh installs into (.venv, or the active virtual environment).
source scripts/_venv.sh
# Installed, not merely importable from this folder (-I leaves the working folder out).
if ! "$python" -I -c "import app, engine, plotly, streamlit, tokenizers" 2>/dev/null; then
    install_app
fi

# HAProxy is Debian's package, installed as the test script installs Chromium.
if ! command -v haproxy >/dev/null 2>&1; then
    echo "installing haproxy (apt-get)" >&2
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; } \
        || ! command -v haproxy >/dev/null 2>&1; then
        echo "serve_class: haproxy is missing and could not be installed" >&2
        exit 3
    fi
fi

# The secret: created once, readable by this user only, never in the repository.
state_dir=${XDG_STATE_HOME:-$HOME/.local/state}/attention-explorer
secret_file=$state_dir/cookie_secret
if [[ ! -s $secret_file ]]; then
    # Written beside it and renamed: a failure leaves no empty secret behind.
    (umask 077 && mkdir -p "$state_dir" \
        && "$python" -c "import secrets; print(secrets.token_hex(32))" >"$secret_file.new" \
        && mv "$secret_file.new" "$secret_file") || {
        rm -f "$secret_file.new"
        echo "serve_class: could not write the cookie secret in $state_dir" >&2
        exit 1
    }
    echo "created the cookie secret in $secret_file" >&2
fi
chmod 600 "$secret_file"
cookie_secret=$(<"$secret_file")

# The engine's threads per pass in each replica: the CPUs this script may use, shared.
cpus=$(nproc)
threads=$((cpus / replicas))
((threads >= 1)) || threads=1

work=$(mktemp -d)
pids=()
haproxy_pid=
stop() {
    trap - INT TERM EXIT
    local pid
    for pid in "${pids[@]}" $haproxy_pid; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
    exit "${1:-0}"
}
trap 'stop 0' INT TERM
trap 'stop $?' EXIT

# Free loopback ports for the replicas, chosen by the system.
read -r -a ports < <("$python" - "$replicas" <<'EOF'
import socket
import sys

sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
EOF
)

for i in $(seq 1 "$replicas"); do
    replica_port=${ports[i - 1]}
    # ATTENTION_EXPLORER_FOLDER_BOX=off: students cannot open the server's folders by path.
    ATTENTION_EXPLORER_FOLDER_BOX=off ATTENTION_EXPLORER_THREADS=$threads \
    STREAMLIT_SERVER_COOKIE_SECRET=$cookie_secret "$python" -m streamlit run app/main.py \
        --server.address 127.0.0.1 --server.port "$replica_port" --server.headless true \
        >"$work/r$i.log" 2>&1 &
    pids+=($!)
    echo "replica r$i port $replica_port pid $!"
done
echo "engine threads per pass in each replica: $threads ($cpus CPUs, $replicas replicas)"

# wait_for SECONDS URL...: true once every URL answers, false when SECONDS pass first.
wait_for() {
    "$python" - "$@" <<'EOF'
import sys
import time
import urllib.request

deadline = time.monotonic() + float(sys.argv[1])
for url in sys.argv[2:]:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(1)
            time.sleep(0.3)
EOF
}

# Wait until every replica answers its health check (or one of them has died).
health=()
for replica_port in "${ports[@]}"; do health+=("http://127.0.0.1:$replica_port/_stcore/health"); done
wait_for 120 "${health[@]}" || { echo "serve_class: a replica did not come up" >&2; tail -n 20 "$work"/r*.log >&2; stop 1; }

# Streamlit's index.html carries one small inline script; the policy allows exactly it, by
# its hash, computed from the Streamlit installed here (it changes between versions).
script_hashes=$("$python" - <<'EOF'
import base64
import hashlib
import re
from pathlib import Path

import streamlit

html = (Path(streamlit.__file__).parent / "static" / "index.html").read_text()
for body in re.findall(r"<script>(.*?)</script>", html, re.S):
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    print(f"'sha256-{digest}'", end=" ")
EOF
)

# Content-Security-Policy, each allowance for something the app does:
#   script-src 'self' + hashes  the app's own bundles (plotly.js included, served by the
#                               replica) and Streamlit's one inline line; no eval, no CDN
#   'wasm-unsafe-eval'          WebAssembly only, not JavaScript eval: Streamlit's protobuf
#                               bundle (long.js) compiles a tiny multiply module of its own
#                               bytes; blocked, it falls back to JS but reports a violation
#                               on every page load, which would drown a real one
#   style-src 'unsafe-inline'   Streamlit (emotion) and plotly.js write <style> elements
#                               and style attributes while they run
#   img-src data: blob:         icons, chart export (PNG/SVG built in the page)
#   font-src data:              fonts inlined in stylesheets (KaTeX, Material icons)
#   connect-src 'self'          fetch and the same-origin WebSocket (ws: is 'self' in CSP 3)
#   frame-ancestors             who may put the app in a frame: itself, and EMBED_ORIGINS
csp="default-src 'self'; script-src 'self' 'wasm-unsafe-eval' ${script_hashes% }; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'${EMBED_ORIGINS:+ $EMBED_ORIGINS}"

{
    echo "global"
    echo "    maxconn 4096"
    if [[ ${AE_ACCESS_LOG:-0} == 1 ]]; then
        echo "    log stdout format raw local0 info"
    fi
    echo
    echo "defaults"
    echo "    mode http"
    if [[ ${AE_ACCESS_LOG:-0} == 1 ]]; then
        echo "    log global"
        echo '    log-format "access %ci %s %ST %HM %HPO %hr"'
        echo "    option logasap                  # a WebSocket is logged as it opens"
    fi
    cat <<EOF
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    timeout http-keep-alive 10s
    timeout tunnel 2h               # an upgraded WebSocket: a whole lecture
    timeout client-fin 10s

frontend class
    bind $address:$port
    capture request header User-Agent len 256
    http-response set-header Content-Security-Policy "$csp"
    http-response set-header X-Content-Type-Options nosniff
    # Links carry the student's text in the query string: none of it leaves for another site.
    http-response set-header Referrer-Policy same-origin
    default_backend replicas

backend replicas
    balance leastconn               # WebSockets are long: spread them, not requests
    cookie ae_replica insert indirect nocache httponly attr "SameSite=Lax"
    option httpchk GET /_stcore/health
    http-check expect status 200
    option redispatch 1             # a dead replica's sessions go to a live one at once
    retries 2
    default-server check inter 2s fastinter 1s fall 2 rise 2
EOF
    for i in $(seq 1 "$replicas"); do
        echo "    server r$i 127.0.0.1:${ports[i - 1]} cookie r$i"
    done
} >"$work/haproxy.cfg"

haproxy -db -f "$work/haproxy.cfg" &
haproxy_pid=$!
# Ready once HAProxy answers a health check, passed through to a replica.
probe=$address
[[ $probe == 0.0.0.0 ]] && probe=127.0.0.1
wait_for 30 "http://$probe:$port/_stcore/health" || { echo "serve_class: HAProxy did not start" >&2; stop 1; }
echo "haproxy port $port pid $haproxy_pid"
where_to_open "$address" "$port"

# Until HAProxy stops or a signal comes: say when a replica dies (it is not restarted;
# HAProxy's health check takes it out and its sessions come back on the others).
declare -A reported=()
while kill -0 "$haproxy_pid" 2>/dev/null; do
    for i in "${!pids[@]}"; do
        if [[ -z ${reported[$i]:-} ]] && ! kill -0 "${pids[i]}" 2>/dev/null; then
            reported[$i]=1
            echo "replica r$((i + 1)) (pid ${pids[i]}) has stopped; its sessions go to the others"
        fi
    done
    sleep 1 &
    wait $! || true
done
echo "serve_class: HAProxy stopped" >&2
stop 1
