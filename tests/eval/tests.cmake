# eval area: `depthbench eval` against a tiny trained run (h5py and the PyTorch reference read
# the files; mpirun checks that ranks do not change the result).
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME eval.eval_command
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/eval_command.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/eval_command "${MPIRUN}")
  set_tests_properties(eval.eval_command PROPERTIES LABELS "eval;train" TIMEOUT 300)
endif()
