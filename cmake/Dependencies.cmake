# Finds every external dependency once; targets elsewhere only link the imported targets.
find_package(MPI REQUIRED COMPONENTS C CXX)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options unit_test_framework)
find_package(OpenMP REQUIRED COMPONENTS CXX)
# ICU: Unicode general categories, White_Space, NFC and the reference regex of the tokenizer.
find_package(ICU REQUIRED COMPONENTS uc i18n)
# Compressed tokenize input: .gz (zlib1g-dev) and .zst (libzstd-dev).
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
# OpenBLAS built for OpenMP: inside our own parallel loops it runs single-threaded instead of
# oversubscribing the cores with its own pthreads.
find_library(BLAS_LIBRARIES NAMES openblas
             PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib64/openblas-openmp NO_DEFAULT_PATH)
find_path(CBLAS_INCLUDE_DIR cblas.h
          PATHS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/openblas-openmp NO_DEFAULT_PATH)
if(NOT BLAS_LIBRARIES OR NOT CBLAS_INCLUDE_DIR)
  message(WARNING "OpenMP OpenBLAS (libopenblas-openmp-dev) not found, using the default OpenBLAS")
  unset(BLAS_LIBRARIES CACHE)
  unset(CBLAS_INCLUDE_DIR CACHE)
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS REQUIRED)
  find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread openblas-openmp)
endif()
if(NOT CBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "cblas.h not found: install libopenblas-openmp-dev")
endif()

# CUDA: AUTO builds it when nvcc is present, ON requires it, OFF skips it.
set(DEPTHBENCH_HAVE_CUDA OFF)
if(DEPTHBENCH_CUDA_EMULATION)
  include(CudaEmulation)
elseif(NOT DEPTHBENCH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  set(nvcc_usable OFF)
  if(CMAKE_CUDA_COMPILER)
    # CUDA 12.1 raised the kernel parameter limit from 4 KiB to 32 KiB, which the AttnRes depth
    # softmax needs (up to 14 KiB: its lists of 256 source pointers, depth_softmax.hpp).
    execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE nvcc_version_text)
    string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" nvcc_release "${nvcc_version_text}")
    set(nvcc_version "${CMAKE_MATCH_1}")
    if(nvcc_version AND nvcc_version VERSION_GREATER_EQUAL 12.1)
      set(nvcc_usable ON)
    else()
      set(why "${CMAKE_CUDA_COMPILER} is CUDA '${nvcc_version}'; the CUDA backend needs 12.1 or newer")
      if(DEPTHBENCH_CUDA STREQUAL "ON")
        message(FATAL_ERROR "DEPTHBENCH_CUDA=ON: ${why}")
      endif()
      message(WARNING "DepthBench: ${why}: building without it")
    endif()
  endif()
  if(nvcc_usable)
    # Hopper (H100/H200) unless the user names targets: set before enable_language, which would
    # otherwise pick nvcc's default (sm_75 with CUDA 13: no Hopper instructions such as wgmma).
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(NOT NCCL_LIBRARY OR NOT NCCL_INCLUDE_DIR)
      message(FATAL_ERROR "CUDA found but NCCL is missing (libnccl, nccl.h)")
    endif()
    set(DEPTHBENCH_HAVE_CUDA ON)
    message(STATUS "DepthBench: CUDA backend ON (${CMAKE_CUDA_COMPILER}, sm_${CMAKE_CUDA_ARCHITECTURES})")
    # cuDNN 9 (optional): the headers of its backend graph API for the fused attention
    # (src/ops/cuda/cudnn_attention.cpp). The library is opened at run time (dlopen), so the
    # program starts on a node without it and train.attention = auto falls back; the library
    # found here is only reported. CUDNN_ROOT (e.g. an NVIDIA wheel's nvidia/cudnn) is searched
    # first.
    set(DEPTHBENCH_HAVE_CUDNN OFF)
    if(DEPTHBENCH_CUDNN)
      find_path(CUDNN_INCLUDE_DIR cudnn_graph.h HINTS ENV CUDNN_ROOT ${CUDAToolkit_INCLUDE_DIRS}
                PATH_SUFFIXES include)
      find_library(CUDNN_LIBRARY NAMES cudnn cudnn_graph HINTS ENV CUDNN_ROOT
                   ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
      if(CUDNN_INCLUDE_DIR AND EXISTS ${CUDNN_INCLUDE_DIR}/cudnn_version.h)
        file(STRINGS ${CUDNN_INCLUDE_DIR}/cudnn_version.h cudnn_version_lines
             REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
        string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*CUDNN_MINOR ([0-9]+).*CUDNN_PATCHLEVEL ([0-9]+).*"
               "\\1.\\2.\\3" CUDNN_VERSION "${cudnn_version_lines}")
        if(CUDNN_VERSION VERSION_GREATER_EQUAL 9 AND CUDNN_VERSION VERSION_LESS 10)
          set(DEPTHBENCH_HAVE_CUDNN ON)
        endif()
      endif()
      if(DEPTHBENCH_HAVE_CUDNN)
        message(STATUS "DepthBench: cuDNN ${CUDNN_VERSION} attention ON (headers ${CUDNN_INCLUDE_DIR}; "
                       "library loaded at run time, here ${CUDNN_LIBRARY})")
      else()
        message(STATUS "DepthBench: cuDNN 9 headers not found: attention without cuDNN "
                       "(set CUDNN_ROOT to use it)")
      endif()
    endif()
  elseif(DEPTHBENCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DEPTHBENCH_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
if(NOT DEPTHBENCH_HAVE_CUDA AND NOT DEPTHBENCH_CUDA_EMULATION)
  message(STATUS "DepthBench: nvcc not found or disabled, building the CPU backend only")
endif()
