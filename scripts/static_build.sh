#!/usr/bin/env bash
# Builds a fully static cronstable for x86_64 Linux with the glibc target
# (`-C target-feature=+crt-static`), strips it and prints its size.
#
# Why: sidecar mode copies the binary into an application's own image (see
# deploy/examples/sidecar.yaml), which may carry another C library or none;
# a static binary runs in any Linux image. The musl target gives the same
# without glibc's caveats when it is installed (`--musl`).
#
# Accounts (docs/kubernetes.md, "Static binary"): glibc loads its NSS
# modules (systemd, sssd, LDAP...) with dlopen, which from a static binary
# only works with a glibc of exactly the same version (a first build here
# died of SIGSEGV in initgroups on a host with `passwd: files systemd`).
# So a static build never calls NSS: cronstable reads /etc/passwd and
# /etc/group itself (src/platform/accounts.rs); accounts that exist only in sssd or
# LDAP are not found there.
#
# Usage: scripts/static_build.sh [--musl] [extra cargo args...]
# Output: target/<triple>/release/cronstable (stripped).
set -euo pipefail
cd "$(dirname "$0")/.."

triple=x86_64-unknown-linux-gnu
flags="-C target-feature=+crt-static"
if [ "${1:-}" = "--musl" ]; then
  shift
  triple=x86_64-unknown-linux-musl
  flags=""
  if ! rustup target list --installed 2>/dev/null | grep -qx "$triple"; then
    echo "static_build: the $triple target is not installed (rustup target add $triple)" >&2
    exit 1
  fi
fi

# --target keeps this build in target/<triple>/, apart from the normal
# dynamic build, so switching between them does not rebuild either.
RUSTFLAGS="${RUSTFLAGS:-} $flags" cargo build --release --locked --target "$triple" --bin cronstable "$@"

bin="target/$triple/release/cronstable"
strip "$bin"
# A dynamically linked binary names its loader (PT_INTERP) and its
# libraries (NEEDED); a static one (static-pie included) has neither.
if readelf -lW "$bin" | grep -q INTERP || readelf -dW "$bin" | grep -q NEEDED; then
  echo "static_build: $bin is still dynamically linked:" >&2
  readelf -dW "$bin" | grep NEEDED >&2 || true
  exit 1
fi
echo "static_build: $bin ($(stat -c %s "$bin") bytes, stripped, static)"
