add_test(NAME train.cli_training
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_training.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                 ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/cli_training)
set_tests_properties(train.cli_training PROPERTIES LABELS train TIMEOUT 600)
