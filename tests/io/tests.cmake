# io area: `depthbench export` and `--hf` end to end on a tiny trained run (h5py and an
# HF-style PyTorch model read the exports; transformers/safetensors are used when installed).
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME io.export_command
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/export_command.sh $<TARGET_FILE:depthbench>
                   ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/export_command)
  set_tests_properties(io.export_command PROPERTIES LABELS "io;train" TIMEOUT 300)
endif()
# Paths stored in files (manifest's tokenizer, run file's data patterns) resolve from any folder.
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME io.export_elsewhere
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/export_elsewhere.sh $<TARGET_FILE:depthbench>
                   ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/export_elsewhere)
  set_tests_properties(io.export_elsewhere PROPERTIES LABELS "io" TIMEOUT 300)
endif()
# Every design's `export --format hf` loads through the shipped modelling code (torch only; and
# AutoModelForCausalLM when transformers is installed) and gives `eval`'s window losses.
if(TARGET depthbench AND SYSTEM_PYTHON)
  add_test(NAME io.hf_designs
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/hf_designs.sh $<TARGET_FILE:depthbench>
                   ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-work/hf_designs)
  set_tests_properties(io.hf_designs PROPERTIES LABELS "io;train" TIMEOUT 300)
endif()
