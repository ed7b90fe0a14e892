# The PyTorch reference's own checks (gradcheck, the spec's init equivalences, counts).
add_test(NAME reference.pytest COMMAND ${SYSTEM_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(reference.pytest PROPERTIES LABELS reference TIMEOUT 900)
