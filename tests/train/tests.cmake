add_test(NAME train.cli_training
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_training.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                 ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/cli_training)
set_tests_properties(train.cli_training PROPERTIES LABELS "train;slow" TIMEOUT 600)
add_test(NAME train.every_design_trains
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/every_design_trains.sh $<TARGET_FILE:depthbench> ${SYSTEM_PYTHON}
                 ${PROJECT_BINARY_DIR}/test-work/every_design_trains)
set_tests_properties(train.every_design_trains PROPERTIES LABELS "train;slow" TIMEOUT 1200)
add_test(NAME train.weights_loader
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/weights_loader.py $<TARGET_FILE:depthbench>
                 ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/weights_loader)
set_tests_properties(train.weights_loader PROPERTIES LABELS train TIMEOUT 300)
# The GPU training script with the CPU in the GPU's place: train.stop_after_steps stops with a
# checkpoint, the rerun resumes to the uninterrupted curve bit for bit, a checkpoint moves
# between backends.
add_test(NAME train.stop_and_resume
         COMMAND ${CMAKE_COMMAND} -E env GPU_BACKEND=cpu "DESIGNS=pre_ln hc"
                 bash ${PROJECT_SOURCE_DIR}/tests/gpu/train_on_gpu.sh $<TARGET_FILE:depthbench>
                 ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/stop_and_resume
                 "${MPIRUN}")
set_tests_properties(train.stop_and_resume PROPERTIES LABELS train SKIP_RETURN_CODE 77 TIMEOUT 600)
