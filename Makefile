# The common commands. `make demo` and `make test` do all the set-up themselves.
BUILD ?= build
EMULATED_BUILD ?= build-emulated
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
MPIRUN = mpirun --allow-run-as-root --oversubscribe
PYTHON ?= /usr/bin/python3
DEMO_RANKS ?= 2

.PHONY: deps configure configure-emulated build demo demo-data test test-quick test-emulated bench format clean

deps:
	@scripts/install-deps.sh

# ccache, where installed, serves the second build tree (the emulated device) from the first.
LAUNCHER = $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(LAUNCHER) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The bundled corpus: Debian's fortunes, byte-level tokens, 5% held out for validation.
demo-data: build
	@test -f data/demo/manifest.ini || $(BUILD)/depthbench tokenize --tokenizer bytes \
	  --format fortunes --input '/usr/share/games/fortunes/*' --val-fraction 0.05 --out data/demo

# The main job on the embedded default: the demo suite (all designs, three shapes) on the CPU,
# then the postprocess report.
demo: demo-data
	$(MPIRUN) -np $(DEMO_RANKS) $(BUILD)/depthbench sweep input/demo.ini --ranks-per-run 1 --out runs/demo
	$(PYTHON) -m postprocess report runs/demo --out runs/demo/report

# Every test; then the gpu tests again, on the emulated device (doc/cuda.md, "The emulated
# device"), whose build tree is built on one core while the main tree's tests run (many of them
# wait on MPI ranks, signals and files).
test: build configure-emulated
	@cmake --build $(EMULATED_BUILD) -j 1 > $(EMULATED_BUILD)/build.log 2>&1 & emulated=$$!; \
	  (cd $(BUILD) && ctest --output-on-failure -j 2 --timeout 1500); main=$$?; \
	  wait $$emulated || { tail -40 $(EMULATED_BUILD)/build.log; exit 1; }; \
	  test $$main -eq 0
	cd $(EMULATED_BUILD) && ctest --output-on-failure -j 2 --timeout 1500 -L "gpu|emulation"

# The CUDA backend's sources built by the host compiler against the emulated device, and the
# gpu and emulation tests run on it (no GPU needed).
configure-emulated: deps
	@cmake -S . -B $(EMULATED_BUILD) -DCMAKE_BUILD_TYPE=Release -DDEPTHBENCH_CUDA_EMULATION=ON $(LAUNCHER) >/dev/null

test-emulated: configure-emulated
	@cmake --build $(EMULATED_BUILD) -j $(JOBS)
	cd $(EMULATED_BUILD) && ctest --output-on-failure -j 2 --timeout 1500 -L "gpu|emulation"

test-quick: build
	cd $(BUILD) && ctest --output-on-failure -j 2 -LE "slow|gpu"

bench: build
	$(BUILD)/gemm_panels_bench 2
	bench/cpu_vs_pytorch.sh $(BUILD) 256 4 256 4 1
	bench/cpu_vs_pytorch.sh $(BUILD) 256 4 256 4 2

format:
	clang-format -i $$(git ls-files 'src/*.cpp' 'src/*.hpp' 'src/*.cu' 'tests/*.cpp' 'tests/*.hpp')

clean:
	rm -rf $(BUILD)
