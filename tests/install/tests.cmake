# install area: `cmake --install` into a temporary prefix and a new user's walkthrough with the
# installed commands from a folder outside the repository (tokenize, plan, 2-rank sweep,
# depthbench-report, eval, export).
if(TARGET depthbench)
  add_test(NAME install.walkthrough
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/walkthrough.sh ${PROJECT_BINARY_DIR} "${MPIRUN}")
  set_tests_properties(install.walkthrough PROPERTIES LABELS "install" TIMEOUT 300)
endif()
# `depthbench selftest --backend cpu` from an installed prefix: its table, verdict and exit status.
if(TARGET depthbench)
  add_test(NAME install.selftest
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/selftest.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(install.selftest PROPERTIES LABELS "install" TIMEOUT 300)
endif()
