#!/usr/bin/env bash
# Builds and runs tilekit's fuzz targets (cargo-fuzz layout, libFuzzer with AddressSanitizer).
#
#   fuzz/run.sh TARGET SECONDS     run one target for SECONDS (after its regression inputs)
#   fuzz/run.sh all SECONDS        every target, one after the other
#   fuzz/run.sh list               the targets
#   fuzz/run.sh build              build every target (and install cargo-fuzz if needed)
#   fuzz/run.sh triage TARGET      replay every crash kept under target/fuzz/artifacts/TARGET and
#                                  group them by panic location (one line per kind, with an input)
#   fuzz/run.sh merge TARGET       add what earlier runs found (target/fuzz/corpus/TARGET) to the
#                                  committed corpus fuzz/corpus/TARGET, keeping only inputs that
#                                  cover new code
#
# A crash is any panic, abort, timeout (over FUZZ_TIMEOUT seconds for one input; default 10, 60 for
# cli_args, which runs whole commands) or
# allocation over 4096 MB (one malloc, or the process's RSS): the script then prints the panic,
# keeps the input under target/fuzz/artifacts/TARGET/ and exits 1. Save a minimised crash as a
# regression with: fuzz/run.sh minimize TARGET ARTIFACT (writes fuzz/regressions/TARGET/).
#
# Files: fuzz/corpus/TARGET (committed seeds and minimised finds, read), target/fuzz/corpus/TARGET
# (what this machine's runs add), fuzz/regressions/TARGET (inputs that once crashed: each run
# replays them first), fuzz/dict/TARGET.dict (libFuzzer dictionaries).
#
# Only stable Rust is needed: cargo-fuzz's nightly flags are enabled with RUSTC_BOOTSTRAP=1.
# Environment: FUZZ_SANITIZER (address, or none for speed), FUZZ_TIMEOUT, FUZZ_RSS_MB;
# FUZZ_KEEP_GOING=1 fuzzes on past crashes (a new libFuzzer run after each one, until the time is
# up; every crash is kept under target/fuzz/artifacts/TARGET; see triage), to survey a target that
# still has known crashes; FUZZ_OVERFLOW_CHECKS=0 builds without overflow checks (target/fuzz-O)
# to look past overflow panics for what a release build does.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

TARGETS=(encoding_text json_loaders layout_construction cli_args)
CARGO_FUZZ_VERSION=0.13.2
tools="$root/target/ci-tools"
# FUZZ_OVERFLOW_CHECKS=0: release build without debug assertions and overflow checks (what a
# release binary does: overflow wraps), in its own folder, to survey past overflow panics
if [ "${FUZZ_OVERFLOW_CHECKS:-1}" = 0 ]; then
  out="$root/target/fuzz-O"
  build_mode=(-O)
else
  out="$root/target/fuzz"
  build_mode=()
fi
sanitizer="${FUZZ_SANITIZER:-address}"
# cli_args runs whole commands up to their documented caps (e.g. `sfc --stats` of 4 M accesses,
# 0.5 s in a release build), which AddressSanitizer and a loaded 2-core machine make 20-30x
# slower: a hang is still caught, at 60 s per input
timeout_for() {
  if [ -n "${FUZZ_TIMEOUT:-}" ]; then echo "$FUZZ_TIMEOUT"
  elif [ "$1" = cli_args ]; then echo 60
  else echo 10; fi
}
rss_mb="${FUZZ_RSS_MB:-4096}"
triple="$(rustc -vV | sed -n 's/^host: //p')"

usage() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
  exit 2
}

is_target() {
  local t
  for t in "${TARGETS[@]}"; do [ "$t" = "$1" ] && return 0; done
  return 1
}

cargo_fuzz() {
  if [ ! -x "$tools/cargo-fuzz/bin/cargo-fuzz" ] \
    || ! "$tools/cargo-fuzz/bin/cargo-fuzz" --version | grep -q " $CARGO_FUZZ_VERSION\$"; then
    echo "installing cargo-fuzz $CARGO_FUZZ_VERSION into $tools/cargo-fuzz" >&2
    cargo install -q --locked --version "$CARGO_FUZZ_VERSION" --root "$tools/cargo-fuzz" cargo-fuzz >&2
  fi
  RUSTC_BOOTSTRAP=1 "$tools/cargo-fuzz/bin/cargo-fuzz" fuzz "$@"
}

build() {
  # release with debug assertions and overflow checks (cargo-fuzz's default), the sanitizer's
  # allocator hooks give -malloc_limit_mb
  cargo_fuzz build --fuzz-dir fuzz --target-dir "$out" --sanitizer "$sanitizer" "${build_mode[@]}" "$@" >&2
}

bin() {
  echo "$out/$triple/release/$1"
}

# per-target libFuzzer options (-max_len is left out of crash minimisation: with it libFuzzer
# minimises to an empty input)
max_len() {
  case "$1" in
    json_loaders) echo 20000 ;;
    layout_construction) echo 4096 ;;
    *) echo 1024 ;;
  esac
}

flags() {
  local t="$1"
  local f=(
    "-rss_limit_mb=$rss_mb" "-malloc_limit_mb=$rss_mb" "-timeout=$(timeout_for "$t")"
    "-detect_leaks=0" "-print_final_stats=1"
    "-artifact_prefix=$out/artifacts/$t/"
  )
  [ -f "fuzz/dict/$t.dict" ] && f+=("-dict=fuzz/dict/$t.dict")
  # the CLI commands print; their output goes to /dev/null
  [ "$t" = cli_args ] && f+=("-close_fd_mask=1")
  echo "${f[@]}"
}

# Replays the inputs that once crashed (they must not crash any more).
regressions() {
  local t="$1" dir="fuzz/regressions/$1" files
  [ -d "$dir" ] || return 0
  mapfile -t files < <(find "$dir" -type f ! -name '*.md' | sort)
  [ "${#files[@]}" -gt 0 ] || return 0
  # shellcheck disable=SC2046
  if ! "$(bin "$t")" $(flags "$t") -runs=1 "${files[@]}" >"$out/logs/$t.regressions.log" 2>&1; then
    echo "FAIL $t: a regression input crashes again (log: $out/logs/$t.regressions.log)"
    grep -m1 -B2 -A12 "panicked\|ERROR: \|==ERROR" "$out/logs/$t.regressions.log" || tail -30 "$out/logs/$t.regressions.log"
    return 1
  fi
  echo "$t: ${#files[@]} regression inputs replayed, no crash"
}

run_one() {
  local t="$1" secs="$2" log="$out/logs/$1.log"
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t" "$out/logs"
  if ! regressions "$t"; then
    [ "${FUZZ_KEEP_GOING:-0}" = 1 ] || return 1
  fi
  echo "$t: fuzzing for ${secs} s (sanitizer $sanitizer, limits ${rss_mb} MB, $(timeout_for "$t") s per input)"
  local rc=0
  if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
    # one libFuzzer run after another until the time is up, each ending at a crash (libFuzzer's
    # own -fork mode with -ignore_crashes finds far fewer here)
    local end=$((SECONDS + secs)) runs=0 crashes=0
    : >"$log"
    while [ "$SECONDS" -lt "$end" ]; do
      runs=$((runs + 1))
      # shellcheck disable=SC2046
      "$(bin "$t")" $(flags "$t") -max_len="$(max_len "$t")" -max_total_time=$((end - SECONDS)) \
        "$out/corpus/$t" "fuzz/corpus/$t" >>"$log" 2>&1 || crashes=$((crashes + 1))
    done
    local total
    total="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | awk '{ s += $1 } END { print s + 0 }')"
    echo "$t: $total inputs in $runs runs ($((total / (secs > 0 ? secs : 1))) exec/s), $crashes ended in a crash"
    echo "  last status: $(grep -E '^#[0-9]+' "$log" | tail -1)"
    echo "  crashes kept: $(find "$out/artifacts/$t" -type f | wc -l) (fuzz/run.sh triage $t)"
    return 0
  fi
  # shellcheck disable=SC2046
  "$(bin "$t")" $(flags "$t") -max_len="$(max_len "$t")" -max_total_time="$secs" \
    "$out/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  local done_line
  done_line="$(grep -E '^#[0-9]+' "$log" | tail -1 || true)"
  local execs rate rss
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
  rss="$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $t after $(grep -cE '^#[0-9]+' "$log" || true) status lines (exit $rc; log: $log)"
    grep -m1 -B2 -A20 "panicked\|==ERROR\|ERROR: libFuzzer" "$log" || tail -40 "$log"
    grep -E "^(artifact_prefix|Test unit written)" "$log" || true
    return 1
  fi
  echo "$t: ok: ${execs:-?} inputs, ${rate:-?} exec/s, peak RSS ${rss:-?} MB; last status: ${done_line}"
}

# One line per kind of crash: the panic message and location (or the sanitizer's or libFuzzer's
# error line), how many artifacts have it, and the smallest of them.
triage() {
  local t="$1" f sig
  local tmp="$out/logs/$t.triage"
  : >"$tmp"
  for f in "$out/artifacts/$t"/*; do
    [ -f "$f" ] || continue
    # shellcheck disable=SC2046
    "$(bin "$t")" $(flags "$t") -runs=1 "$f" >"$tmp.one" 2>&1 || true
    sig="$(awk '
      !msg && /panicked at/ {
        here = ""
        if (match($0, /crates\/tilekit-[a-z]+\/src\/[^ :]+:[0-9]+/)) here = substr($0, RSTART, RLENGTH)
        getline m; msg = m
        if (here != "") { print msg " at " here; done = 1; exit }
        next }
      !msg && /==ERROR: AddressSanitizer|ERROR: libFuzzer|out-of-memory \(|Timeout|timeout after/ {
        msg = $0; next }
      msg && /crates\/tilekit-[a-z]+\/src\// {
        match($0, /crates\/tilekit-[a-z]+\/src\/[^ :]+:[0-9]+/)
        print msg " at " substr($0, RSTART, RLENGTH); done = 1; exit }
      END { if (!done && msg) print msg }' \
      "$tmp.one" | sed -E 's/==[0-9]+==//; s/\(thread T[0-9]+\)//; s/0x[0-9a-f]+/0x…/g; s/malloc\([0-9]+\)/malloc(N)/')"
    printf '%s\t%s\t%s\n' "${sig:-no crash}" "$(wc -c <"$f")" "$f" >>"$tmp"
  done
  sort -t$'\t' -k1,1 -k2,2n "$tmp" | awk -F'\t' '
    $1 != last { if (last != "") print n "x  " last "\n      e.g. " ex; last = $1; n = 0; ex = $3 " (" $2 " bytes)" }
    { n++ }
    END { if (last != "") print n "x  " last "\n      e.g. " ex }'
}

cmd="${1:-}"
case "$cmd" in
  list) printf '%s\n' "${TARGETS[@]}" ;;
  build) build ;;
  all)
    [ $# -eq 2 ] || usage
    build
    passed=0 failed=0
    for t in "${TARGETS[@]}"; do
      if run_one "$t" "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    done
    echo "fuzz: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    ;;
  triage)
    [ $# -eq 2 ] && is_target "$2" || usage
    build "$2"
    triage "$2"
    ;;
  merge)
    [ $# -eq 2 ] && is_target "$2" || usage
    build "$2"
    mkdir -p "$out/corpus/$2"
    # shellcheck disable=SC2046
    "$(bin "$2")" $(flags "$2") -max_len="$(max_len "$2")" -merge=1 "fuzz/corpus/$2" "$out/corpus/$2"
    ;;
  minimize)
    [ $# -eq 3 ] && is_target "$2" || usage
    build "$2"
    mkdir -p "fuzz/regressions/$2"
    # shellcheck disable=SC2046
    "$(bin "$2")" $(flags "$2") -minimize_crash=1 -max_total_time=60 \
      -exact_artifact_path="fuzz/regressions/$2/$(basename "$3")" "$3" || true
    echo "minimised crash: fuzz/regressions/$2/$(basename "$3")"
    ;;
  *)
    [ $# -eq 2 ] && is_target "$1" || usage
    build "$1"
    run_one "$1" "$2"
    ;;
esac
