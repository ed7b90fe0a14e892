# Shared by the sweep test scripts: arguments, a work directory, suite generation, h5 helpers.
# usage: source common.sh DEPTHBENCH PYTHON SOURCE_DIR WORK_DIR "MPIRUN..."
set -euo pipefail
DEPTHBENCH=$1
PYTHON=$2
SOURCE_DIR=$3
WORK=$4
read -r -a MPIRUN <<<"${5//;/ }"  # CMake passes the list ;-separated
DATA=$WORK/data
rm -rf "$WORK"
mkdir -p "$WORK"
# The tests need the byte-level demo data; make a small copy from the fortunes corpus.
if ! ls /usr/share/games/fortunes/* >/dev/null 2>&1; then
  echo "SKIP: no fortunes corpus"; exit 77
fi
"$DEPTHBENCH" tokenize --tokenizer bytes --format fortunes --input '/usr/share/games/fortunes/fortunes' \
  --val-fraction 0.05 --out "$DATA" >/dev/null
"$PYTHON" -c "import h5py" 2>/dev/null || { echo "SKIP: h5py missing for $PYTHON"; exit 77; }

# make_suite OUT.ini KEY=VALUE...: the tiny suite with lines replaced (key = value).
make_suite() {
  local out=$1; shift
  sed "s#@DATA@#$DATA#" "$SOURCE_DIR/tests/sweep/tiny_suite.ini.in" >"$out"
  local kv key value
  for kv in "$@"; do
    key=${kv%%=*}; value=${kv#*=}
    if grep -q "^$key = " "$out"; then
      sed -i "s#^$key = .*#$key = $value#" "$out"
    else
      echo "unknown suite line $key" >&2; exit 1
    fi
  done
}

# h5attr FILE ATTR: a root attribute as text.
h5attr() {
  "$PYTHON" -c "import h5py,sys; v=h5py.File(sys.argv[1],'r').attrs[sys.argv[2]]; print(v.decode() if isinstance(v,bytes) else v)" "$1" "$2"
}

fail() { echo "FAIL: $*" >&2; exit 1; }
