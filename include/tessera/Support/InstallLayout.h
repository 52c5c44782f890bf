//===- InstallLayout.h - Where an installed Tessera is ----------*- C++ -*-===//
//
// `cmake --install` copies the tools, headers, libraries and the runtime
// into a prefix (docs/extending.md, "Out of tree"). The tools and the
// extension dialects name files that emitted programs build with (the
// runtime's headers and library); built in a build tree they know those
// paths at compile time, installed they find them relative to the running
// executable, so that an installed prefix can be moved.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SUPPORT_INSTALLLAYOUT_H
#define TESSERA_SUPPORT_INSTALLLAYOUT_H

#include <optional>
#include <string>

namespace tessera::support {

/// The prefix the running tool is installed in: PREFIX when the executable
/// is PREFIX/bin/<tool> and PREFIX/lib/cmake/tessera/TesseraConfig.cmake
/// exists (the file `cmake --install` writes; a build tree has none), else
/// nothing (the tool runs from its build tree).
std::optional<std::string> installPrefix();

/// `installed` under the install prefix when there is one (installed is
/// relative to the prefix, e.g. "lib/libTesseraRuntime.a"), else
/// `buildTree`.
std::string installedOr(const std::string &installed,
                        const std::string &buildTree);

} // namespace tessera::support

#endif // TESSERA_SUPPORT_INSTALLLAYOUT_H
