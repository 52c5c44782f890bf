# The CUDA language as every library of CUDA kernels in Tessera compiles it:
# the core's TesseraRuntimeCuda (CMakeLists.txt beside this file) and
# extensions' kernels (dialects/llm/runtime/cuda). include() it in the
# directory that adds such a library: nvcc and the architecture are cached,
# the language and the flags are set per directory.

if(NOT CMAKE_CUDA_COMPILER)
  find_program(TESSERA_RT_NVCC nvcc HINTS /usr/local/cuda/bin
               PATHS ENV CUDA_HOME PATH_SUFFIXES bin)
  if(NOT TESSERA_RT_NVCC)
    message(FATAL_ERROR "TESSERA_RUNTIME_CUDA is on, but nvcc was not found "
      "(set CMAKE_CUDA_COMPILER, or TESSERA_RUNTIME_CUDA=OFF)")
  endif()
  set(CMAKE_CUDA_COMPILER ${TESSERA_RT_NVCC} CACHE FILEPATH "nvcc")
endif()
if(NOT CMAKE_CUDA_ARCHITECTURES)
  # Hopper with its architecture-specific features (wgmma, TMA) by default.
  set(CMAKE_CUDA_ARCHITECTURES 90a CACHE STRING "CUDA architectures")
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
# -O2 rather than CMake's default -O3 for Release: the kernels are
# memory-bound or library calls, and nvcc time dominates the build.
if(CMAKE_CUDA_FLAGS_RELEASE STREQUAL "-O3 -DNDEBUG")
  set(CMAKE_CUDA_FLAGS_RELEASE "-O2 -DNDEBUG")
endif()
