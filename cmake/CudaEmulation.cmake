# The emulated CUDA device (DEPTHBENCH_CUDA_EMULATION=ON, src/emulation): the toolkit's headers
# for the real types and signatures (nothing of the toolkit is linked), Boost.Context for the
# fibers that run a block's threads.
find_path(CUDA_EMULATION_TOOLKIT_INCLUDE cuda_runtime.h
          HINTS ENV CUDA_HOME /usr/local/cuda PATH_SUFFIXES include)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDA_EMULATION_TOOLKIT_INCLUDE} /usr/include)
find_path(CUDNN_INCLUDE_DIR cudnn_graph.h HINTS ENV CUDNN_ROOT ${CUDA_EMULATION_TOOLKIT_INCLUDE}
          PATH_SUFFIXES include)
if(NOT CUDA_EMULATION_TOOLKIT_INCLUDE OR NOT NCCL_INCLUDE_DIR OR NOT CUDNN_INCLUDE_DIR)
  message(FATAL_ERROR "DEPTHBENCH_CUDA_EMULATION needs the CUDA toolkit's headers (cuda_runtime.h, "
                      "nccl.h, cudnn_graph.h; set CUDA_HOME)")
endif()
find_package(Boost 1.74 REQUIRED COMPONENTS context)
set(DEPTHBENCH_HAVE_CUDNN ON)
message(STATUS "DepthBench: CUDA backend on the emulated device (headers ${CUDA_EMULATION_TOOLKIT_INCLUDE})")
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)  # tests/emulation/planted_defects.py rebuilds planted sources with them
