#!/usr/bin/env bash
# A new user's path with the installed commands only: `cmake --install` into a temporary prefix,
# then, from a temporary folder outside the repository, their own JSONL text → tokenize → plan
# (of their suite and of a shipped one, by name) → sweep on 2 ranks → depthbench-report → eval,
# and `export` run from yet another folder. Tiny on purpose: byte tokens, 2 runs of 6 steps.
set -euo pipefail
build_dir=$1; read -r -a mpirun <<<"${2//;/ }"
home=$(mktemp -d "${TMPDIR:-/tmp}/depthbench-install.XXXXXX")
trap 'rm -rf "$home"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Each step's wall time, printed for the record (never asserted).
last=$(date +%s.%N)
took() {
  local now; now=$(date +%s.%N)
  awk -v step="$1" -v a="$now" -v b="$last" 'BEGIN { printf "%-28s %6.1f s\n", step, a - b }'
  last=$now
}

prefix=$home/prefix
cmake --install "$build_dir" --prefix "$prefix" > "$home/install.log"
took "cmake --install"
for installed in bin/depthbench bin/depthbench-report share/depthbench/suites/demo.ini \
                 share/depthbench/python/postprocess/__main__.py share/depthbench/README.md \
                 share/depthbench/doc/user-guide.md share/depthbench/hf_modeling/modeling_depthbench.py; do
  test -e "$prefix/$installed" || fail "cmake --install did not install $installed"
done
export PATH=$prefix/bin:$PATH
# Nothing of the clone may be reachable from here: not the package, not the suites.
unset PYTHONPATH

mkdir -p "$home/project/corpus" && cd "$home/project"
for i in $(seq 1 120); do
  echo "{\"text\": \"Document $i of the walkthrough: a quick brown fox jumps over the lazy dog $i times.\"}"
done > corpus/notes.jsonl
depthbench tokenize --tokenizer bytes --input corpus --val-fraction 0.1 --out data/mine > tokenize.log
took "depthbench tokenize"
cat > mine.ini <<'INI'
[suite]
name = mine
designs = pre_ln, hc
budget = total 60K
depths = 2
shape_rule = sub1b
heads = 2

[learning_rates]
default = 3e-3

[recipe]
model.vocab_size = 257
train.steps = 6
train.seq_len = 32
train.global_batch = 4
train.micro_batch = 2
train.log_interval = 2
train.val_interval = 3
train.val_windows = 4
train.checkpoint_interval = 3
train.threads = 1
data.train_files = data/mine/train_*.npy
data.val_files = data/mine/val_*.npy
INI
depthbench plan mine.ini > plan.log
grep -q "pre_ln" plan.log || fail "plan lists no pre_ln run: $(cat plan.log)"
depthbench plan demo.ini > plan_demo.log || fail "the shipped demo.ini is not found by name"
grep -q "suite demo" plan_demo.log || fail "plan demo.ini: $(head -3 plan_demo.log)"
took "depthbench plan (x2)"

"${mpirun[@]}" -np 2 depthbench sweep mine.ini --out runs/mine --quiet > sweep.log ||
  fail "sweep exited $?: $(tail -5 sweep.log)"
took "mpirun -np 2 sweep (2 runs)"
run=$(ls runs/mine/mine__pre_ln__*.h5)
depthbench-report runs/mine --out report > report.log || fail "depthbench-report: $(tail -5 report.log)"
took "depthbench-report"
test -s report/report.md || fail "no report/report.md"
# Without a Python that has h5py, the entry point says what is needed instead of a traceback.
status=0; DEPTHBENCH_PYTHON=/bin/false depthbench-report runs/mine --out r2 2> no_python.err || status=$?
[ "$status" = 127 ] && grep -q "no Python with h5py" no_python.err ||
  fail "depthbench-report without a usable Python: status $status, $(cat no_python.err)"
grep -q "pre_ln\|Pre-LN" report/report.md || fail "report.md does not rank pre_ln"
depthbench eval --weights "${run%.h5}.weights" --data 'data/mine/val_*.npy' --windows 2 \
  --threads 1 > eval.log
took "depthbench eval"
grep -q "mean loss" eval.log || fail "eval printed no mean loss: $(cat eval.log)"

# export from another folder: the run file stores where its data is.
mkdir -p "$home/elsewhere" && cd "$home/elsewhere"
depthbench export "$home/project/$run" --format safetensors --out exported > export.log
took "depthbench export"
test -s exported/model.safetensors || fail "export from another folder wrote no model.safetensors"
# An HC run as a Hugging Face folder ships the installed modelling code.
hc_run=$(cd "$home/project" && ls runs/mine/mine__hc__*.h5)
depthbench export "$home/project/$hc_run" --format hf --out exported-hf > export_hf.log
cmp -s exported-hf/modeling_depthbench.py "$prefix/share/depthbench/hf_modeling/modeling_depthbench.py" ||
  fail "export --format hf of an HC run did not ship the installed modelling code: $(cat export_hf.log)"
took "depthbench export --format hf"
echo "install walkthrough: ok (prefix $prefix)"
