# emulation area (built only with DEPTHBENCH_CUDA_EMULATION=ON): the emulated device's own tests —
# the SIMT model, the PTX fragments, the hazard checker and the libraries — each a Boost test
# registered by tests/CMakeLists.txt; the NCCL emulation again on two ranks.
add_test(NAME emulation.libraries_nccl_on_two_ranks
         COMMAND ${MPIRUN} -np 2 $<TARGET_FILE:libraries_nccl_test>)
set_tests_properties(emulation.libraries_nccl_on_two_ranks PROPERTIES LABELS emulation TIMEOUT 300)
# The hazard checker's test holds kernels of its own: instrumented like the backend's sources.
depthbench_emulated_kernel_sources(${CMAKE_CURRENT_LIST_DIR}/simt_hazards_test.cpp)
# The planted defects (planted_defects.py): each of seven classic kernel defects, planted in a
# copy of one backend source, makes a named gpu test fail. Rebuilds seven objects: a few minutes.
if(SYSTEM_PYTHON)
  add_test(NAME emulation.planted_defects_are_caught
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/planted_defects.py ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR} ${MPIRUN})
  set_tests_properties(emulation.planted_defects_are_caught PROPERTIES LABELS emulation TIMEOUT 1500)
endif()
