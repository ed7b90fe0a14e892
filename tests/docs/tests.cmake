# docs area: the docs cannot drift from the binary. The ```sh runnable blocks of the docs run
# with `depthbench` and `depthbench-report` installed into a temporary prefix on PATH, every
# `--option` the docs give a command is in its --help, every repository file they cite exists,
# and doc/sweeps.md's exit-status table is what the binary does.
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME docs.doc_examples
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/doc_examples.py ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR} "${MPIRUN}")
  set_tests_properties(docs.doc_examples PROPERTIES LABELS "docs" TIMEOUT 600)
endif()
