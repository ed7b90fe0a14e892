# bench area: bench/gpu_speed.sh end to end on the CPU (--cpu-smoke, about 40 s on 2 cores): the
# GPU speed table's script and format, provable without a GPU.
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME bench.gpu_speed_cpu_smoke
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_speed_smoke.sh $<TARGET_FILE:depthbench>
                   ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/gpu_speed_smoke)
  set_tests_properties(bench.gpu_speed_cpu_smoke PROPERTIES LABELS "bench;slow" TIMEOUT 300)
endif()

# bench/bf16_state.sh on tiny runs (12 runs of 3 steps, about 20 s): its runs and its table.
if(TARGET depthbench)
  add_test(NAME bench.bf16_state_smoke
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bf16_state_smoke.sh $<TARGET_FILE:depthbench>
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/bf16_state_smoke)
  set_tests_properties(bench.bf16_state_smoke PROPERTIES LABELS "bench" TIMEOUT 300)
endif()
