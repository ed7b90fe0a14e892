#!/usr/bin/env bash
# Ranks and threads never change the output: JSONL in nested folders (plain, .gz, .zst) plus a
# text file, tokenized by 1 rank x 1 thread, 2 ranks x 1 thread and 2 ranks x 2 threads with a
# validation split and small shards, must give the same shard files byte for byte and the same
# [shards] and [counts] (npy and llm.c output). Also: --help answers without starting MPI.
# usage: mpi_shards.sh DEPTHBENCH BUILD_DIR "MPIRUN;ARGS"      exit 77 = skipped
set -euo pipefail
depthbench=$1 work=$2/tokenize_mpi
IFS=';' read -r -a mpirun <<<"$3"
if [ -z "${mpirun[0]:-}" ] || ! command -v "${mpirun[0]}" >/dev/null; then echo "SKIP: no mpirun"; exit 77; fi
rm -rf "$work" && mkdir -p "$work/in/a/b"
for f in 0 1 2 3; do  # uneven files, lines of varying length, one bad line each
  for i in $(seq 1 $((300 + 150 * f))); do
    printf '{"text": "file %d document %d %s"}\n' "$f" "$i" "$(printf '%*s' $((i % 37)) '' | tr ' ' x)"
  done >"$work/in/a/part$f.jsonl"
  echo '{"text": broken' >>"$work/in/a/part$f.jsonl"
done
gzip -n "$work/in/a/part1.jsonl" && mv "$work/in/a/part1.jsonl.gz" "$work/in/a/b/"
zstd -q --rm "$work/in/a/part2.jsonl"
seq 1 500 >"$work/in/notes.txt"

run() {  # OUT FORMAT THREADS [LAUNCHER...]
  local out=$1 format=$2 threads=$3; shift 3
  "$@" "$depthbench" tokenize --tokenizer bytes --input "$work/in" --val-fraction 0.1 --seed 3 \
    --shard-tokens 7000 --output-format "$format" --threads "$threads" --quiet --out "$work/$out" \
    >"$work/$out.log"
}
section() { sed -n "/^\[$2\]/,/^\[/p" "$work/$1/manifest.ini" | grep -v '^\['; }
for format in npy llmc; do
  run "one_$format" "$format" 1
  run "two_$format" "$format" 1 "${mpirun[@]}" -np 2
  run "twothreads_$format" "$format" 2 "${mpirun[@]}" -np 2
  for other in "two_$format" "twothreads_$format"; do
    diff <(cd "$work/one_$format" && ls | grep -v manifest) <(cd "$work/$other" && ls | grep -v manifest)
    for shard in $(cd "$work/one_$format" && ls | grep -v manifest); do
      cmp "$work/one_$format/$shard" "$work/$other/$shard"
    done
    diff <(section "one_$format" shards) <(section "$other" shards)
    diff <(section "one_$format" counts | grep -v seconds) <(section "$other" counts | grep -v seconds)
  done
  grep -q '^ranks = 2' "$work/two_$format/manifest.ini"
done
shards=$(section one_npy shards | wc -l)
[ "$shards" -gt 4 ] || { echo "expected several shards, got $shards"; exit 1; }
# --help must not start MPI: with a transport that does not exist MPI_Init would fail.
OMPI_MCA_pml=no_such_transport "$depthbench" --help >/dev/null
OMPI_MCA_pml=no_such_transport "$depthbench" tokenize --help | grep -q -- --shard-tokens
for command in train bench plan sweep diagnose eval; do
  OMPI_MCA_pml=no_such_transport "$depthbench" "$command" --help >/dev/null
done
echo "1 rank == 2 ranks == 2 ranks x 2 threads: $shards shard files, $(section one_npy counts | grep tokens_train)"
