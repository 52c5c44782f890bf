//===- InstallLayout.cpp - Where an installed Tessera finds itself --------===//

#include "tessera/Support/InstallLayout.h"

#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

std::optional<std::string> tessera::support::installPrefix() {
  // Linux names the running executable in /proc (symbolic links resolved,
  // as `cmake --install` copies files, never links).
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return std::nullopt;
  fs::path prefix = exe.parent_path().parent_path();
  if (exe.parent_path().filename() != "bin" ||
      !fs::is_regular_file(
          prefix / "lib" / "cmake" / "tessera" / "TesseraConfig.cmake", ec))
    return std::nullopt;
  return prefix.string();
}

std::string tessera::support::installedOr(const std::string &installed,
                                          const std::string &buildTree) {
  if (std::optional<std::string> prefix = installPrefix())
    return (fs::path(*prefix) / installed).string();
  return buildTree;
}
