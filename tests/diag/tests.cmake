# diag area: the diagnostics of a tiny trained model are identical on 1 and on 4 ranks.
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME diag.mpi_one_and_four_ranks_identical
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_identity.sh $<TARGET_FILE:depthbench>
                   ${PROJECT_BINARY_DIR} "${MPIRUN}" ${SYSTEM_PYTHON})
  set_tests_properties(diag.mpi_one_and_four_ranks_identical PROPERTIES SKIP_RETURN_CODE 77
                       LABELS diag TIMEOUT 600)
endif()
if(TARGET depthbench)
  add_test(NAME diag.console_lines
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/console.sh $<TARGET_FILE:depthbench>
                   ${PROJECT_BINARY_DIR} "${MPIRUN}")
  set_tests_properties(diag.console_lines PROPERTIES SKIP_RETURN_CODE 77 LABELS diag
                       TIMEOUT 300)
endif()
