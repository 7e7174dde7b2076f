#!/usr/bin/env bash
# A three-node gossip cluster on this machine, from examples/gossip/:
# makes a throwaway cluster CA and one certificate per node (openssl),
# then starts node-a, node-b and node-c on 127.0.0.1 (web 8081-8083, peer
# listeners 9441-9443). One node is elected leader and runs the
# `leader-report` job every ten seconds; every node runs `heartbeat`.
#
#   scripts/gossip_quickstart.sh              # until Ctrl-C
#   scripts/gossip_quickstart.sh --seconds 30 # stop after 30 s
#
# Watch it with `curl -s http://127.0.0.1:8081/cluster` (who leads, each
# peer's status) and `curl -s http://127.0.0.1:8081/fleet` (what every
# node ran). Kill the leader (its pid is printed) and another node takes
# over within about one interval (2 s here).
#
# CRONSTABLE_BIN names a built binary (default: build a release one).
# QUICKSTART_DIR is where the configs are copied and the certificates
# made (default: a new temporary folder, removed at the end).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

seconds=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="${2:?--seconds takes a number}"; shift 2 ;;
    *) echo "usage: $0 [--seconds N]" >&2; exit 2 ;;
  esac
done

command -v openssl >/dev/null 2>&1 || {
  echo "gossip_quickstart: openssl is needed to make the certificates" >&2
  exit 1
}

bin="${CRONSTABLE_BIN:-}"
if [ -z "$bin" ]; then
  (cd "$repo" && cargo build --release --quiet)
  bin="$repo/target/release/cronstable"
fi
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
[ -x "$bin" ] || { echo "gossip_quickstart: no cronstable binary at $bin" >&2; exit 1; }

owned_dir=""
dir="${QUICKSTART_DIR:-}"
if [ -z "$dir" ]; then
  dir="$(mktemp -d)"
  owned_dir="$dir"
fi
mkdir -p "$dir/tls"
cp "$repo"/examples/gossip/node-*.yaml "$dir/"
cd "$dir"

# The cluster CA: the trust boundary. Whoever holds a certificate it
# signed can join, so it is made here and thrown away with the folder.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj "/CN=cronstable quickstart CA" -keyout tls/ca.key -out tls/ca.pem 2>/dev/null
for n in a b c; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=node-$n" -keyout "tls/node-$n.key" -out "tls/node-$n.csr" 2>/dev/null
  # Every node is polled at 127.0.0.1, and a poller checks that the
  # peer's certificate names the address it polled: an IP SAN. The same
  # certificate serves as this node's client certificate.
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"tls/node-$n.ext"
  openssl x509 -req -in "tls/node-$n.csr" -CA tls/ca.pem -CAkey tls/ca.key -CAcreateserial \
    -days 2 -extfile "tls/node-$n.ext" -out "tls/node-$n.pem" 2>/dev/null
done
chmod 600 tls/*.key

pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$owned_dir" ]; then rm -rf "$owned_dir"; fi
}
trap stop EXIT
trap 'exit 0' INT TERM

web=8081
for n in a b c; do
  NODE_NAME="node-$n" "$bin" -c "node-$n.yaml" &
  pids+=("$!")
  echo "gossip_quickstart: node-$n is pid $! (web http://127.0.0.1:$web)"
  web=$((web + 1))
done
echo "gossip_quickstart: configs and certificates in $dir"

# In the background and waited for, so Ctrl-C or a TERM ends the wait at
# once (bash runs a trap only after a foreground command ends).
if [ -n "$seconds" ]; then
  sleep "$seconds" &
  pids+=("$!")
  wait "$!"
else
  wait
fi
