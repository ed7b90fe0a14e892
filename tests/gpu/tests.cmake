# gpu area (built only with the CUDA backend): the Boost tests above compare CUDA ops and whole
# models with the CPU backend; train_on_gpu.sh trains every design through `depthbench train`.
# Each prints "no GPU: skipped" and passes on a machine without a GPU.
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME gpu.train_on_gpu
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/train_on_gpu.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/gpu_train "${MPIRUN}")
  set_tests_properties(gpu.train_on_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu TIMEOUT 600)
endif()
# design_kernels_test launches design functors itself: compiled by nvcc (ops/launch.hpp).
depthbench_device_sources(design_kernels_test ${CMAKE_CURRENT_LIST_DIR}/design_kernels_test.cpp)
