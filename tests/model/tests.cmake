# custom_design_test defines a design of its own and launches its functors: compiled by nvcc when
# the CUDA backend is built (ops/launch.hpp), so its design is part of the CUDA build too.
depthbench_device_sources(custom_design_test ${CMAKE_CURRENT_LIST_DIR}/custom_design_test.cpp)
