#!/usr/bin/env bash
# Paths stored in files do not depend on the current directory (doc/hdf5-schema.md, "Paths
# stored in files"): a run trained with relative data patterns and a tokenizer given by a
# relative path is exported and diagnosed from another folder; an older manifest's relative
# tokenizer path is read relative to the manifest, an older run file's relative patterns
# relative to the run file's folders; a tokenizer that is gone costs the tokenizer files only,
# and the output says how to add them.
set -euo pipefail
bin=$1; python=$2; source_dir=$3; work=$4
rm -rf "$work" && mkdir -p "$work/project/tok" "$work/elsewhere" && cd "$work/project"
fail() { echo "FAIL: $*"; exit 1; }
cp "$source_dir/tests/tokenizer/fixtures/neox_tiny_tokenizer.json" tok/tokenizer.json
"$bin" tokenize --tokenizer tok/tokenizer.json --format fortunes \
  --input /usr/share/games/fortunes/fortunes --val-fraction 0.1 --output-format npy --out data > tokenize.log
grep -q "^tokenizer = $work/project/tok/tokenizer.json$" data/manifest.ini ||
  fail "manifest.ini does not store the tokenizer absolute: $(grep '^tokenizer' data/manifest.ini)"
"$bin" train --model.n_layer 2 --model.d_model 16 --model.n_head 4 --model.vocab_size 267 \
  --train.steps 2 --train.seq_len 16 --train.global_batch 2 --train.micro_batch 2 \
  --train.val_windows 2 --train.threads 1 --data.train_files 'data/train_*.npy' \
  --data.val_files 'data/val_*.npy' --output.name tiny --output.dir runs > train.log

cd "$work/elsewhere"
run=../project/runs/tiny.h5
"$bin" export $run --format hf --out hf_now > export_now.log
cmp -s hf_now/tokenizer.json ../project/tok/tokenizer.json || fail "tokenizer not shipped: $(cat export_now.log)"
"$bin" diagnose $run --only angular_distance --window-len 8 --bootstrap 10 --threads 1 > diagnose.log ||
  fail "diagnose from another folder: $(tail -3 diagnose.log)"

# Files written before paths were stored absolute: relative to the file that stores them.
sed -i 's|^tokenizer = .*|tokenizer = ../tok/tokenizer.json|' ../project/data/manifest.ini
"$python" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); f.attrs['train_files'] = 'data/train_*.npy'; f.attrs['val_files'] = 'data/val_*.npy'" $run
"$bin" export $run --format hf --out hf_old > export_old.log
cmp -s hf_old/tokenizer.json ../project/tok/tokenizer.json || fail "old files: $(cat export_old.log)"

# The tokenizer is gone: the weights are exported, the tokenizer can be added afterwards.
mv ../project/tok ../project/tok.moved
"$bin" export $run --format hf --out hf_gone > export_gone.log || fail "export failed without a tokenizer"
test -s hf_gone/model.safetensors || fail "no weights exported without a tokenizer"
test ! -e hf_gone/tokenizer.json || fail "a tokenizer.json appeared from nowhere"
grep -q "to add the tokenizer, run the same command with --tokenizer" export_gone.log ||
  fail "no hint on adding the tokenizer: $(cat export_gone.log)"
"$bin" export $run --format hf --out hf_gone --tokenizer ../project/tok.moved > export_added.log
cmp -s hf_gone/tokenizer.json ../project/tok.moved/tokenizer.json || fail "--tokenizer did not add it"
echo "export from another folder: ok"
