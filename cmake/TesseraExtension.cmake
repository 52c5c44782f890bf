# tessera_add_dialect_plugin(<name> <sources>...)
#
# An extension dialect as a dialect plugin: a shared library that
# `tessera-opt --load-dialect-plugin=LIB` and
# `tessera-compile --load-dialect-plugin=LIB` load (its sources define MLIR's
# `mlirGetDialectPluginInfo`). It links libMLIR.so, which the tools share,
# and nothing of Tessera's: Tessera's symbols (tsr's ops, the interfaces)
# come from the tool that loads it, which exports them, so that there is one
# copy of each TypeID. Include directories: Tessera's and MLIR's.
function(tessera_add_dialect_plugin name)
  add_library(${name} MODULE ${ARGN})
  target_include_directories(${name} PRIVATE ${TESSERA_INCLUDE_DIRS}
    ${MLIR_INCLUDE_DIRS} ${LLVM_INCLUDE_DIRS})
  target_compile_features(${name} PRIVATE cxx_std_17)
  separate_arguments(tessera_llvm_definitions NATIVE_COMMAND
    "${LLVM_DEFINITIONS}")
  target_compile_definitions(${name} PRIVATE ${tessera_llvm_definitions})
  if(NOT LLVM_ENABLE_RTTI)
    target_compile_options(${name} PRIVATE -fno-rtti)
  endif()
  target_link_libraries(${name} PRIVATE MLIR)
  set_target_properties(${name} PROPERTIES PREFIX "lib"
    POSITION_INDEPENDENT_CODE ON)
endfunction()
