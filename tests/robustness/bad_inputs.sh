#!/usr/bin/env bash
# Table-driven bad input: every case must exit non-zero within seconds (no crash, no hang), print
# one line on stderr that names the problem, and leave no run file that looks complete.
source "$(dirname "$0")/../sweep/common.sh"
source "$(dirname "$0")/probe_run.sh"
cd "$WORK"
probe_ini good.ini
# Token files that must be refused: truncated (odd byte count), empty, a directory.
head -c 1001 "$(ls "$DATA"/train_*.npy | head -1)" >odd.npy
: >empty.npy
mkdir -p tokens_dir
# Suites that must be refused.
make_suite huge.ini "budget=total 1e30"
make_suite negative_steps.ini "train.steps=-5"
make_suite zero_log.ini "train.log_interval=0"
make_suite ok.ini

# A truncated tokenizer.json, and a run file cut in half (as a full disk or a copy can leave it).
printf '{"model": {"type": "BPE", "vocab": ' >truncated_tokenizer.json
mkdir -p cut
checked=0
# expect NAME EXPECTED_TEXT COMMAND...: non-zero exit, no timeout or signal, one stderr line
# containing EXPECTED_TEXT, and no finished run file.
expect() {
  local name=$1 text=$2; shift 2
  rm -rf runs
  local rc=0
  timeout 60 "$@" >"$name.out" 2>"$name.err" || rc=$?
  [ "$rc" -ne 0 ] || fail "$name: exit 0"
  [ "$rc" -lt 124 ] || fail "$name: exit $rc (timeout or signal)"
  grep -qF -- "$text" "$name.err" || fail "$name: stderr lacks '$text': $(cat "$name.err")"
  [ "$(grep -c . "$name.err")" -eq 1 ] || fail "$name: more than one line on stderr: $(cat "$name.err")"
  if ls runs/*.h5 >/dev/null 2>&1; then
    for f in runs/*.h5; do
      [ "$(h5attr "$f" status)" != completed ] || fail "$name: $f says completed"
    done
  fi
  checked=$((checked + 1))
}
train=("$DEPTHBENCH" train --config good.ini)

expect log_interval_0 "train.log_interval = 0: must be ≥ 1" "${train[@]}" --train.log_interval 0
expect val_interval_0 "train.val_interval = 0: must be ≥ 1" "${train[@]}" --train.val_interval 0
expect val_windows_0 "train.val_windows = 0: must be ≥ 1" "${train[@]}" --train.val_windows 0
expect val_windows_negative "train.val_windows = -3" "${train[@]}" --train.val_windows -3
expect lr_nan "train.learning_rate: 'nan' is not a finite number" "${train[@]}" --train.learning_rate nan
expect lr_negative "train.learning_rate = -1: must be > 0" "${train[@]}" --train.learning_rate -1
expect global_batch_0 "train.global_batch = 0: must be ≥ 1" "${train[@]}" --train.global_batch 0
expect rope_theta_0 "model.rope_theta = 0: must be > 1" "${train[@]}" --model.rope_theta 0
expect warmup_2 "train.warmup_fraction = 2: must be in [0, 1]" "${train[@]}" --train.warmup_fraction 2
expect threads_negative "train.threads = -1" "${train[@]}" --train.threads -1
expect checkpoint_negative "train.checkpoint_interval = -5" "${train[@]}" --train.checkpoint_interval -5
expect steps_huge "train.steps: '1e99' is not a whole number" "${train[@]}" --train.steps 1e99
expect name_escapes "output.name = '../../x': must be a plain name" "${train[@]}" --output.name ../../x
expect unknown_design "unknown architecture 'nope'" "${train[@]}" --model.arch nope
expect unknown_key "train.stpes' (valid: --config" "${train[@]}" --train.stpes 5
expect too_big "this model needs at least" "${train[@]}" --model.d_model 65536 --model.n_layer 64 \
  --model.n_head 64
expect odd_token_file "odd.npy" "${train[@]}" --data.train_files odd.npy
expect empty_token_file "empty.npy" "${train[@]}" --data.train_files empty.npy
expect directory_token_file "is a directory" "${train[@]}" --data.train_files tokens_dir
expect missing_token_file "no file matches" "${train[@]}" --data.train_files nowhere/*.npy
expect missing_config "cannot open config file" "$DEPTHBENCH" train --config nowhere.ini
expect plan_huge_budget "beyond what DepthBench trains" "$DEPTHBENCH" plan huge.ini
expect plan_negative_steps "train.steps = -5: must be ≥ 1" "$DEPTHBENCH" plan negative_steps.ini
expect sweep_zero_log "train.log_interval = 0: must be ≥ 1" "$DEPTHBENCH" sweep zero_log.ini \
  --out runs
expect plan_mfu "--mfu 5" "$DEPTHBENCH" plan ok.ini --mfu 5
expect sweep_ranks "--ranks-per-run must be at least 1" "$DEPTHBENCH" sweep zero_log.ini \
  --ranks-per-run 0
expect tokenizer_truncated "truncated_tokenizer.json: JSON: unexpected end of input" \
  "$DEPTHBENCH" tokenize --tokenizer truncated_tokenizer.json --input good.ini --out tk
expect tokenizer_missing "missing.json" "$DEPTHBENCH" tokenize --tokenizer missing.json \
  --input good.ini --out tk
expect unknown_command "unknown command 'nosuch'" "$DEPTHBENCH" nosuch
expect sweep_missing_suite "nowhere.ini" "$DEPTHBENCH" sweep nowhere.ini
# Run files: a finished run cut in half, and a file that is no HDF5 at all.
"$DEPTHBENCH" train --config good.ini --output.dir made >/dev/null
head -c 3000 made/probe.h5 >cut/probe.h5
cp made/probe.weights cut/
expect diagnose_cut_run_file "cut/probe.h5" "$DEPTHBENCH" diagnose cut/probe.h5
expect diagnose_not_hdf5 "good.ini" "$DEPTHBENCH" diagnose good.ini
# Issue 23: an id no vocabulary reaches (was std::bad_alloc), a run file attribute of the wrong
# type (was "HDF5 call failed: H5Tget_cset"), a negative window count (was "cannot create
# std::vector larger than max_size()"), and a depth whose narrowest shape outgrows the budget
# (was planned silently at 26.4M parameters for a 60K budget).
sed 's/"hello": 263/"hello": 2147483647/' "$SOURCE_DIR/tests/tokenizer/fixtures/neox_tiny_tokenizer.json" \
  >huge_id_tokenizer.json
expect tokenizer_huge_id "token 'hello' has id 2147483647, beyond the largest vocabulary" \
  "$DEPTHBENCH" tokenize --tokenizer huge_id_tokenizer.json --input good.ini --out tk
mkdir -p int_status
cp made/probe.h5 made/probe.weights int_status/
"$PYTHON" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); del f.attrs['status']; f.attrs['status']=1" \
  int_status/probe.h5
expect diagnose_int_status "int_status/probe.h5: attribute 'status' is an integer, expected a string" \
  "$DEPTHBENCH" diagnose int_status/probe.h5
expect diagnose_negative_windows "--angular-windows = -5: must be a whole number ≥ 1" "$DEPTHBENCH" diagnose \
  made/probe.h5 --angular-windows -5
make_suite deep.ini "depths=100000"
expect plan_depth_beyond_budget "is below the narrowest shape at L = 100000" "$DEPTHBENCH" plan deep.ini
echo "bad inputs: $checked cases refused with one clear line"
