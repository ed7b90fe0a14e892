#!/usr/bin/env bash
# Two MPI ranks split JSONL inputs by byte ranges; their shards, concatenated in rank order,
# must equal the one-rank shards byte for byte (train and val), and the counts must agree.
# usage: mpi_shards.sh DEPTHBENCH BUILD_DIR "MPIRUN;ARGS"      exit 77 = skipped
set -euo pipefail
depthbench=$1 work=$2/tokenize_mpi
IFS=';' read -r -a mpirun <<<"$3"
if [ -z "${mpirun[0]:-}" ] || ! command -v "${mpirun[0]}" >/dev/null; then echo "SKIP: no mpirun"; exit 77; fi
rm -rf "$work" && mkdir -p "$work/in"
for f in 0 1 2; do  # uneven files, lines of varying length, one bad line each
  for i in $(seq 1 $((300 + 150 * f))); do
    printf '{"text": "file %d document %d %s"}\n' "$f" "$i" "$(printf '%*s' $((i % 37)) '' | tr ' ' x)"
  done >"$work/in/part$f.jsonl"
  echo '{"text": broken' >>"$work/in/part$f.jsonl"
done
# Headerless output: the shards concatenate to the one-rank array.
common=(tokenize --tokenizer bytes --input "$work/in/*.jsonl" --val-fraction 0.1 --output-format olmo)
"$depthbench" "${common[@]}" --out "$work/one" >/dev/null
"${mpirun[@]}" -np 2 "$depthbench" "${common[@]}" --out "$work/two" >/dev/null
for split in train val; do
  cat "$work/two/${split}_rank000.u16" "$work/two/${split}_rank001.u16" | cmp - "$work/one/${split}_rank000.u16"
done
for key in documents documents_val tokens_train tokens_val malformed_json; do
  a=$(grep "^$key = " "$work/one/manifest.ini") b=$(grep "^$key = " "$work/two/manifest.ini")
  [ "$a" = "$b" ] || { echo "manifest differs: $a vs $b"; exit 1; }
done
grep -q '^ranks = 2' "$work/two/manifest.ini"
echo "2 ranks == 1 rank: $(grep '^tokens_train' "$work/one/manifest.ini"), $(grep '^malformed_json' "$work/two/manifest.ini")"
