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
# The test programs that run every registered design (what each demands of a design:
# tests/support/design_variants.hpp). model.extra_design_in_one_file builds a tree of its own
# with one more design file and runs them all there (minutes: labelled slow). Its build folder
# sits beside this one, at the same depth below the sources, so that the compiler cache serves
# the library's objects (their include paths are relative). pytorch_agreement_test is left out
# for time: pytorch_bf16_storage_test reads the same reference and shows its skip of a design it
# does not know.
set(DEPTHBENCH_DESIGN_LOOP_TESTS
    model.design_registry_test model.parameter_layout_test model.layer_loop_test
    model.model_gradcheck_test model.recompute_test model.bf16_state_test
    model.bf16_storage_test model.fused_residual_norm_test model.poisoned_memory_test
    model.pytorch_bf16_storage_test app.registry_listing_test
    diag.diag_known_answers_test io.export_roundtrip_test train.gradient_buckets_test
    train.memory_estimate_test)
add_test(NAME model.extra_design_in_one_file
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/extra_design_in_one_file.sh ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR}-extra-design ${CMAKE_BUILD_TYPE}
                 ${DEPTHBENCH_DESIGN_LOOP_TESTS})
set_tests_properties(model.extra_design_in_one_file PROPERTIES LABELS "model;slow" TIMEOUT 3000)
