# probe_ini OUT.ini [--section.key=value...]: the tiny one-block Pre-LN run of the robustness
# tests on the demo data ($DATA), written as INI with the given keys replaced. Sourced after
# ../sweep/common.sh.
probe_ini() {
  local out=$1; shift
  cat >"$out" <<INI
[model]
arch = pre_ln
n_layer = 1
d_model = 16
n_head = 2
vocab_size = 257
[train]
steps = 4
seq_len = 16
global_batch = 2
micro_batch = 2
val_interval = 2
val_windows = 2
checkpoint_interval = 0
threads = 1
[data]
train_files = $DATA/train_*.npy
val_files = $DATA/val_*.npy
[output]
dir = runs
name = probe
INI
  local kv key value
  for kv in "$@"; do
    key=${kv#--}; key=${key%%=*}; value=${kv#*=}
    sed -i "s#^${key#*.} = .*#${key#*.} = $value#" "$out"
  done
}
