# jobs area: the batch job scripts (jobs/). run_sweep_logic: jobs/run_sweep.sh's decisions with a
# fake mpirun, seconds. slurm_requeue: the demo job script on a real one-node Slurm cluster
# installed from Debian's packages (root only, minutes; labelled slow so test-quick leaves it).
add_test(NAME jobs.run_sweep_logic
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_sweep_logic.sh ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR}/test-work/jobs_run_sweep_logic "${MPIRUN}")
set_tests_properties(jobs.run_sweep_logic PROPERTIES LABELS jobs TIMEOUT 300)
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME jobs.slurm_requeue
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/slurm_requeue.sh $<TARGET_FILE:depthbench>
                   ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR}/test-work/jobs_slurm_requeue)
  set_tests_properties(jobs.slurm_requeue PROPERTIES SKIP_RETURN_CODE 77 LABELS "scheduler;slow"
                       TIMEOUT 480)
endif()
