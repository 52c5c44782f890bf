# Helpers for targets that are plain C++ (not LLVM-style): they keep C++
# exceptions and RTTI as the compiler defaults give them, which nlohmann_json
# and GoogleTest rely on. MLIR-facing code uses add_mlir_* instead.

# tessera_add_tool(<name> <sources>... [LINK <libs>...])
# A command-line tool written in plain C++, placed in build/bin/.
function(tessera_add_tool name)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK})
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endfunction()

# tessera_add_unittest(<name>Tests <sources>... [LINK <libs>...])
# A GoogleTest executable in build/unittests/, run by lit's GoogleTest format
# (test/Unit/lit.cfg.py), so its cases count in the one test summary.
function(tessera_add_unittest name)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  if(NOT name MATCHES "Tests$")
    message(FATAL_ERROR "unit test executable '${name}' must end in 'Tests'")
  endif()
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE GTest::gtest_main ${ARG_LINK})
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/unittests)
  add_dependencies(TesseraUnitTests ${name})
endfunction()
