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
# The rank-order gradient sum and the bucketed reduction's fault protocol on real ranks; three
# ranks are where MPI_Allreduce's summation order would depend on the message size.
foreach(np 2 3)
  add_test(NAME train.bucketed_sum_on_${np}_ranks
           COMMAND ${MPIRUN} -np ${np} $<TARGET_FILE:bucketed_sum_test>)
  # Open MPI's ring all-reduce forced: its order moves with the count, ours must not care.
  set_tests_properties(train.bucketed_sum_on_${np}_ranks PROPERTIES LABELS train TIMEOUT 120
    ENVIRONMENT "OMP_NUM_THREADS=1;OMPI_MCA_coll_tuned_use_dynamic_rules=1;OMPI_MCA_coll_tuned_allreduce_algorithm=4")
endforeach()
# Training with train.reduce_bucket_mb = 0 and with tiny buckets gives the same curves and
# weights bit for bit, on 2 and 3 ranks, for Pre-LN, HC, mHC and Full AttnRes.
add_test(NAME train.bucketed_reduction
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bucketed_reduction.sh $<TARGET_FILE:depthbench>
                 ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR}/test-work/bucketed_reduction "${MPIRUN}")
set_tests_properties(train.bucketed_reduction PROPERTIES LABELS train SKIP_RETURN_CODE 77
                     TIMEOUT 600)
