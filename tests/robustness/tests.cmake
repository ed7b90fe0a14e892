# robustness area: bad input is refused with one clear line, and faults of the machine (a full
# disk, a killed rank, an I/O error on rank 0 of a two-rank run) end runs in seconds, resumably.
if(TARGET depthbench AND SYSTEM_PYTHON)
  foreach(script bad_inputs faults stale_results signals)
    add_test(NAME robustness.${script}
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${script}.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                     ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/robustness_${script} "${MPIRUN}")
    set_tests_properties(robustness.${script} PROPERTIES SKIP_RETURN_CODE 77 LABELS robustness
                         TIMEOUT 600)
  endforeach()
endif()
