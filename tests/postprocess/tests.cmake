# The Python postprocess (postprocess/): pytest over synthetic run files, plus one tiny real
# sweep made with the depthbench built here (test_real_depthbench.py reads DEPTHBENCH_BIN).
add_test(NAME postprocess.pytest
         COMMAND ${SYSTEM_PYTHON} -m pytest -q ${CMAKE_CURRENT_LIST_DIR}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(postprocess.pytest PROPERTIES
                     ENVIRONMENT "DEPTHBENCH_BIN=$<TARGET_FILE:depthbench>"
                     LABELS postprocess)
