# gpu area (built only with the CUDA backend): the Boost tests above compare CUDA ops and whole
# models with the CPU backend; train_on_gpu.sh trains every design through `depthbench train`.
# Each prints "no GPU: skipped" and passes on a machine without a GPU.
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME gpu.train_on_gpu
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/train_on_gpu.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/gpu_train "${MPIRUN}")
  set_tests_properties(gpu.train_on_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu TIMEOUT 1200)
  if(DEPTHBENCH_CUDA_EMULATION)
    # The kernels these trainings launch are checked for hazards by the parity tests above; here
    # the end-to-end path (streams, graphs, checkpoints) runs without the checker, twice as fast.
    set_tests_properties(gpu.train_on_gpu PROPERTIES ENVIRONMENT
                         "DEPTHBENCH_EMULATED_DEVICE=1;DB_EMULATION_HAZARDS=0")
  endif()
endif()
# The GPU check bundle (tests/gpu/bundle.sh) in a bare Debian root made by debootstrap (cached
# under the build folder): env.sh, depthbench, a 2-rank mpirun CPU training and check.sh --bundle
# up to "no GPU". Root only (skips otherwise); fails when debootstrap is missing or fails. About 3
# minutes on 2 busy cores once the root is cached; the first debootstrap downloads ≈ 40 MB.
add_test(NAME gpu.bundle_in_bare_root
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bundle_chroot.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                 ${PROJECT_BINARY_DIR}/test-work/bundle_in_bare_root)
set_tests_properties(gpu.bundle_in_bare_root PROPERTIES LABELS "bundle;slow" SKIP_RETURN_CODE 77 TIMEOUT 1200 RUN_SERIAL TRUE)
# check.sh's own logic in a fake bundle (stub programs, a fake nvidia-smi): a hanging program is
# cut at PROGRAM_S, and OUT holds the summary and logs after every row, also after a SIGKILL;
# the summary's stage table and failure lines; stage time spent is "skipped", not FAIL; the hf
# stage compares in one Python process.
add_test(NAME gpu.check_script
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_script_test.sh ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR}/test-work/check_script)
set_tests_properties(gpu.check_script PROPERTIES LABELS bundle TIMEOUT 300)
# design_kernels_test launches design functors itself: compiled by nvcc (ops/launch.hpp).
depthbench_device_sources(design_kernels_test ${CMAKE_CURRENT_LIST_DIR}/design_kernels_test.cpp)
# The bucketed NCCL sum needs one GPU per rank: on 2 ranks (skips with a line on fewer GPUs).
add_test(NAME gpu.nccl_bucketed_sum_on_two_ranks
         COMMAND ${MPIRUN} -np 2 $<TARGET_FILE:nccl_bucketed_sum_test>)
set_tests_properties(gpu.nccl_bucketed_sum_on_two_ranks PROPERTIES LABELS gpu TIMEOUT 300)
# The static launch check (doc/cuda.md "Static launch check"): every kernel's registers, shared
# and local memory from the sm_90 cubins of the libraries, against the launch configurations in
# the script's table. Runs without a GPU; a kernel missing from the table fails it.
if(SYSTEM_PYTHON AND NOT DEPTHBENCH_CUDA_EMULATION)  # reads nvcc's cubins
  add_test(NAME gpu.kernel_launch_resources
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/kernel_resources.py
                   $<TARGET_FILE:depthbench_cuda> $<TARGET_FILE:depthbench_lib>)
  set_tests_properties(gpu.kernel_launch_resources PROPERTIES LABELS gpu TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endif()
# On the emulated device (doc/cuda.md, "The emulated device"): check.sh's sweep stage with
# train.backend = cuda from this build tree (the ops stage would rerun the programs above), and
# `depthbench selftest --backend cuda`, the first command on a new GPU node.
if(DEPTHBENCH_CUDA_EMULATION AND TARGET depthbench)
  add_test(NAME gpu.check_sweep_stage_on_emulated_device
           COMMAND env DEPTHBENCH_EMULATED_DEVICE=1 CHECK_PREBUILT=1 BUILD=${PROJECT_BINARY_DIR}
                   STAGES=sweep WORK=${PROJECT_BINARY_DIR}/test-work/check PYTHON=${SYSTEM_PYTHON}
                   bash ${CMAKE_CURRENT_LIST_DIR}/check.sh)
  # Minutes on the emulated device (two sweeps of 30-step runs): by hand, `ctest -L emulated_check`.
  set_tests_properties(gpu.check_sweep_stage_on_emulated_device PROPERTIES LABELS emulated_check
                       TIMEOUT 1200)
  add_test(NAME gpu.selftest_on_emulated_device COMMAND $<TARGET_FILE:depthbench> selftest --backend cuda)
  set_tests_properties(gpu.selftest_on_emulated_device PROPERTIES LABELS gpu TIMEOUT 900)
  # The whole-model programs run kernels that the op-level programs (ops, packed kernels,
  # attention, flash, cuDNN, MoDA, bf16 head and storage, design kernels) check for hazards
  # already: without the checker they take a half to a fifth of the time (CI's budget).
  set_tests_properties(gpu.selftest_on_emulated_device gpu.cuda_graphs_test
                       gpu.cuda_model_parity_test PROPERTIES ENVIRONMENT DB_EMULATION_HAZARDS=0)
endif()
