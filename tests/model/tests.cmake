# custom_design_test defines a design of its own and launches its functors: compiled by nvcc when
# the CUDA backend is built (ops/launch.hpp), so its design is part of the CUDA build too.
depthbench_device_sources(custom_design_test ${CMAKE_CURRENT_LIST_DIR}/custom_design_test.cpp)
# The lane functors on an emulated warp against one lane: without contraction of a·b + c, which GCC
# decides per instantiation, so that only the sums across lanes may tell the two apart.
# Their loops over a lane's register arrays run in the GPU's form (core/device_unroll.hpp:
# constant trip counts with a break, constant-index stores), on one lane and on 32.
target_compile_options(stream_lanes_warp_test PRIVATE -ffp-contract=off)
target_compile_options(depth_softmax_warp_test PRIVATE -ffp-contract=off)
target_compile_definitions(stream_lanes_warp_test PRIVATE DB_EMULATE_DEVICE_LOOPS)
target_compile_definitions(depth_softmax_warp_test PRIVATE DB_EMULATE_DEVICE_LOOPS)
