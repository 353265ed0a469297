#!/usr/bin/env bash
# Builds the tilekit Python wheel (abi3: one wheel for CPython >= 3.9 on x86_64 Linux) into
# target/wheels. Needs a Rust toolchain and python3 >= 3.9 with pip; installs the pinned maturin
# into target/py-build (a venv of its own, so the caller's Python stays untouched).
#
#   bash crates/tilekit-py/build.sh && pip install target/wheels/tilekit-*.whl
#
# The wheel is tagged manylinux for the oldest glibc its symbols need (maturin's audit picks it:
# built on Debian 12, glibc 2.36, the Rust standard library's symbols make it manylinux_2_34, so
# it installs on glibc >= 2.34: Debian 12, Ubuntu 22.04, RHEL 9 and later). For older systems
# build it on one (or in a manylinux container); TILEKIT_WHEEL_COMPAT=linux tags it plain
# linux_x86_64 instead (no audit).
set -euo pipefail
cd "$(dirname "$0")/../.."
MATURIN_VERSION=1.16.0
venv=target/py-build
if [ ! -x "$venv/bin/maturin" ] || [ "$("$venv/bin/maturin" --version)" != "maturin $MATURIN_VERSION" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "maturin==$MATURIN_VERSION"
fi
rm -f target/wheels/tilekit-*.whl
"$venv/bin/maturin" build --release -m crates/tilekit-py/Cargo.toml -o target/wheels \
  ${TILEKIT_WHEEL_COMPAT:+--compatibility "$TILEKIT_WHEEL_COMPAT"} "$@"
ls -l target/wheels/tilekit-*.whl
