#!/usr/bin/env bash
# Bounded coverage-guided fuzzing of the native core's scanners (cargo fuzz, libFuzzer).
#   bash tools/fuzz_native.sh [SECONDS_PER_TARGET]     (default 30; `make fuzz`; CI runs it)
# Targets (native/fuzz/fuzz_targets/): spans (int64 offsets + data into the span kernels),
# chain (any bytes as the hash chain's content buffers and as payload spans for the typed reader),
# pleach_block (any bytes into the JSONL block scanner
# and the tool-argument reader), toh_file (any bytes into the toh file scanner, also after a
# session header), claude_code (any bytes into both JSON-lines transcript scanners, the Claude
# Code one and the Codex one: each input runs through each mapping, also after a clean line of
# each format; one target for both, so CI's fuzz step keeps its 30 s per target), otlp_json (any
# bytes into the OTLP/JSON span and log-record decoder, as a document, as JSON lines and as a
# span's attribute value), platform_jsonl (any bytes into the tracing-platform JSON Lines
# scanner, Phoenix spans, also after a clean span line) and canonical (any text into canonical
# JSON). A crash, a
# panic or a broken invariant fails the run and leaves the input in native/fuzz/artifacts/.
# Needs the nightly toolchain (libFuzzer's instrumentation) and cargo-fuzz, which this script
# installs from crates.io when it is missing (a few minutes, once per machine).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-30}"
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz_native: the nightly Rust toolchain is missing (rustup toolchain list)." >&2
    echo "  cargo fuzz needs it for libFuzzer's instrumentation." >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz_native: installing cargo-fuzz (cargo install --locked cargo-fuzz) ..."
    cargo install --locked --quiet cargo-fuzz
fi
cd native/fuzz
# seeds: the bundled sample's lines (the corpus folder is git-ignored and grows run to run)
mkdir -p corpus/pleach_block corpus/canonical corpus/spans corpus/chain corpus/toh_file \
    corpus/claude_code corpus/otlp_json corpus/platform_jsonl
head -c 4000 ../../data/pleach/harness_event_log.jsonl > corpus/pleach_block/seed-sample
printf '{"b":[1.5,-0,1e16,"\\u00e9"],"a":{"x":null}}' > corpus/canonical/seed-object
head -c 4000 ../../data/toh/garden-report/session.jsonl > corpus/toh_file/seed-sample
head -c 4000 ../../tests/data/claude_code/spotter/short.jsonl > corpus/claude_code/seed-sample
head -c 4000 ../../tests/data/codex/localpush/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl \
    > corpus/claude_code/seed-codex
head -c 4000 ../../tests/data/phoenix/recorded/spans_rest.jsonl > corpus/platform_jsonl/seed-rest
head -c 4000 ../../tests/data/phoenix/recorded/spans_dataframe.jsonl > corpus/platform_jsonl/seed-df
status=0
cp ../../tests/data/otel/interlingua/otel-genai-openai-v2.otlp.json corpus/otlp_json/seed-sample
for target in pleach_block toh_file claude_code otlp_json platform_jsonl canonical spans chain; do
    echo "== cargo fuzz run $target for ${SECONDS_PER_TARGET}s"
    log="$(mktemp)"
    if cargo +nightly fuzz run -O "$target" "corpus/$target" -- \
            -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 >"$log" 2>&1; then
        grep -E '^Done ' "$log" || true
    else  # a crash, a panic or a broken invariant: show libFuzzer's report
        tail -40 "$log" >&2
        echo "fuzz target $target failed (the input is in native/fuzz/artifacts/$target/)" >&2
        status=1
    fi
    rm -f "$log"
done
exit "$status"
