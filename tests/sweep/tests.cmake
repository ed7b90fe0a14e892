# sweep area: real mpirun sweeps on the CPU backend (scripts in this folder; h5py reads the
# run files). Each prepares its own byte-level data from the fortunes corpus.
if(TARGET depthbench AND SYSTEM_PYTHON)
  foreach(script partition g_independence resume_kill9 diverged_failed diagnostics_in_sweep
                 plan_notes two_groups_uneven inputs_checked estimates)
    add_test(NAME sweep.${script}
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${script}.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                     ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/sweep_${script} "${MPIRUN}")
    set_tests_properties(sweep.${script} PROPERTIES SKIP_RETURN_CODE 77 LABELS sweep TIMEOUT 600)
  endforeach()
endif()
