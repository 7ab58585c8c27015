#!/usr/bin/env bash
# cargo fuzz on the body parser, the key checker and the logs query: each target for
# FUZZ_SECONDS (default 60). Needs a nightly toolchain (libFuzzer's sanitizers); cargo-fuzz is
# installed under .local/ on first use. Findings land in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
cargo_fuzz_version=0.13.1
root=.local/cargo-fuzz
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "installing a nightly toolchain (rustup) for cargo fuzz" >&2
  rustup toolchain install nightly --profile minimal
fi
if [ ! -x "$root/bin/cargo-fuzz" ]; then
  echo "installing cargo-fuzz $cargo_fuzz_version under $root" >&2
  cargo install --quiet --locked --root "$root" "cargo-fuzz@$cargo_fuzz_version"
fi
export PATH="$PWD/$root/bin:$PATH"
for target in ${FUZZ_TARGETS:-create_body api_key logs_query}; do
  echo "fuzzing $target for ${seconds}s" >&2
  mkdir -p "fuzz/corpus/$target"
  cargo +nightly fuzz run --fuzz-dir fuzz "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -max_len=70000 -print_final_stats=1 2>&1 |
    grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|Done)" || true
  if compgen -G "fuzz/artifacts/$target/*" >/dev/null; then
    echo "fuzz $target: crash inputs in fuzz/artifacts/$target/" >&2
    exit 1
  fi
done
