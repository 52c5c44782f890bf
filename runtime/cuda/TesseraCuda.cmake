# tessera_link_cuda_runtime: what the CMakeLists of a program emitted with
# `tessera-compile --target cuda` includes to link the CUDA runtime.
#
#   include(<runtime>/cuda/TesseraCuda.cmake)
#   add_executable(program program.cpp)
#   tessera_link_cuda_runtime(program [CUDA_ARCH 90a])
#
# The emitted program.cpp is the same C++ as for the CPU target (calls of
# tessera::rt on rt::Tensor values, no kernels of its own), so it is
# compiled by the C++ compiler; the kernels live in TesseraRuntimeCuda,
# which is built from the runtime sources beside this file (once per build
# tree, only the targets the program needs: not the CPU library and its
# OpenBLAS dependency). CUDA_ARCH becomes CMAKE_CUDA_ARCHITECTURES (default
# 90a, i.e. sm_90a); it must be given before the first call, since the
# library is configured once.

# The runtime directory, from this file's location (runtime/cuda/..).
get_filename_component(TESSERA_CUDA_RUNTIME_DIR
  "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

function(tessera_link_cuda_runtime target)
  cmake_parse_arguments(ARG "" "CUDA_ARCH" "" ${ARGN})
  if(NOT TARGET TesseraRuntimeCuda)
    if(ARG_CUDA_ARCH)
      set(CMAKE_CUDA_ARCHITECTURES ${ARG_CUDA_ARCH} CACHE STRING
          "CUDA architectures" FORCE)
    endif()
    set(TESSERA_RUNTIME_CUDA ON CACHE BOOL "Build TesseraRuntimeCuda" FORCE)
    if(NOT DEFINED TESSERA_RUNTIME_CPU)
      set(TESSERA_RUNTIME_CPU OFF CACHE BOOL "Build TesseraRuntime" FORCE)
    endif()
    # EXCLUDE_FROM_ALL: only what `target` links gets built (no tests).
    add_subdirectory(${TESSERA_CUDA_RUNTIME_DIR}
                     ${CMAKE_BINARY_DIR}/tessera-runtime EXCLUDE_FROM_ALL)
  endif()
  target_link_libraries(${target} PRIVATE TesseraRuntimeCuda)
  target_compile_features(${target} PRIVATE cxx_std_17)
endfunction()
