# The backend conformance suite (conformance.cpp), one executable per registered backend
# (DEPTHBENCH_BACKENDS, src/CMakeLists.txt), each under its backend's label: "backend" for the
# CPU, "gpu" for CUDA (prints "no GPU: skipped" without one). The CPU instance also runs on two
# ranks, so the MPI gradient sum is checked across processes.
foreach(backend ${DEPTHBENCH_BACKENDS})
  set(target backend_conformance_${backend})
  add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/conformance.cpp)
  target_link_libraries(${target} PRIVATE depthbench_lib Boost::unit_test_framework)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${target} PRIVATE DB_BACKEND_NAME="${backend}")
  set(label ${DEPTHBENCH_BACKEND_TEST_LABEL_${backend}})
  add_test(NAME ${label}.${target} COMMAND ${target})
  set_tests_properties(${label}.${target} PROPERTIES LABELS ${label})
endforeach()
add_test(NAME backend.backend_conformance_cpu_on_two_ranks
         COMMAND ${MPIRUN} -np 2 $<TARGET_FILE:backend_conformance_cpu>)
set_tests_properties(backend.backend_conformance_cpu_on_two_ranks PROPERTIES LABELS backend
                     ENVIRONMENT OMP_NUM_THREADS=1)
