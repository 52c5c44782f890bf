# `cmake --install BUILD [--prefix PREFIX]`: what an extension built out of
# tree needs (docs/extending.md, "Out of tree"):
#   bin/                 the tools (they find the runtime below at run time,
#                        lib/Support/InstallLayout.cpp, so PREFIX can move)
#   include/tessera/     the headers, TableGen files and generated .inc of the
#                        core, the runtime's headers
#   lib/                 the libraries (add_mlir_library installs the MLIR
#                        ones; the runtime is installed here)
#   lib/cmake/tessera/   TesseraConfig.cmake (find_package(Tessera)) and
#                        TesseraExtension.cmake (tessera_add_dialect_plugin)
#   share/tessera/runtime the runtime's sources (--target cuda builds them)

set(tessera_installed_tools tessera-opt tessera-compile tessera-translate
  tessera-plan tessera-schedule)
if(TARGET tessera-interp)
  list(APPEND tessera_installed_tools tessera-interp)
endif()
# Installed tools find libMLIR.so where the build found it.
set_target_properties(${tessera_installed_tools} PROPERTIES
  INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
install(TARGETS ${tessera_installed_tools} RUNTIME DESTINATION bin)

install(DIRECTORY include/tessera DESTINATION include
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/tessera DESTINATION include
  FILES_MATCHING PATTERN "*.inc" PATTERN "*.h"
  PATTERN "CMakeFiles" EXCLUDE)

install(TARGETS TesseraRuntime ARCHIVE DESTINATION lib)
install(TARGETS tessera-ckpt tessera-calibrate RUNTIME DESTINATION bin)
install(DIRECTORY runtime/include/tessera DESTINATION include)
install(DIRECTORY runtime/ DESTINATION share/tessera/runtime
  PATTERN "unittests" EXCLUDE PATTERN "*.md" EXCLUDE)

# The package: the MLIR it was built with, found again by the extension.
set(TESSERA_BUILT_MLIR_DIR "${MLIR_DIR}")
configure_file(cmake/TesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake-install/TesseraConfig.cmake @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake-install/TesseraConfig.cmake
  cmake/TesseraExtension.cmake DESTINATION lib/cmake/tessera)
