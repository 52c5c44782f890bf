//===- InputFile.cpp - Reading user input files safely --------------------===//

#include "tessera/Support/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera::support {

namespace {

std::string prefix(const std::string &path, std::string_view what) {
  return "cannot read " + std::string(what) + " '" + path + "'";
}

std::string sizeText(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30) && bytes % (uint64_t(1) << 30) == 0)
    return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string tooLarge(uint64_t bytes, uint64_t maxBytes) {
  return "it has " + std::to_string(bytes) + " bytes, more than the limit of " +
         sizeText(maxBytes);
}

/// Why a file with this status cannot be read as input, or "".
std::string refusal(const struct stat &st, uint64_t maxBytes) {
  if (S_ISDIR(st.st_mode))
    return "it is a directory";
  if (!S_ISREG(st.st_mode))
    return "it is not a regular file (a device, FIFO or socket)";
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return tooLarge(st.st_size, maxBytes);
  return "";
}

} // namespace

std::string checkInputFile(const std::string &path, std::string_view what,
                           uint64_t maxBytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return prefix(path, what) + ": " + std::strerror(errno);
  std::string why = refusal(st, maxBytes);
  return why.empty() ? "" : prefix(path, what) + ": " + why;
}

std::optional<std::string> readInputFile(const std::string &path,
                                         std::string_view what,
                                         uint64_t maxBytes,
                                         std::string &error) noexcept {
  try {
    // O_NONBLOCK: opening a FIFO without a writer would otherwise wait
    // forever before fstat can refuse it; regular files ignore the flag.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
      error = prefix(path, what) + ": " + std::strerror(errno);
      return std::nullopt;
    }
    struct stat st;
    std::string why;
    if (::fstat(fd, &st) != 0)
      why = std::strerror(errno);
    else
      why = refusal(st, maxBytes);
    std::string contents;
    if (why.empty()) {
      contents.reserve(static_cast<size_t>(st.st_size));
      char buffer[1 << 16];
      while (true) {
        ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR)
          continue;
        if (n < 0) {
          why = std::strerror(errno);
          break;
        }
        if (n == 0)
          break;
        // The file may grow between fstat and here.
        if (contents.size() + static_cast<size_t>(n) > maxBytes) {
          why = tooLarge(contents.size() + n, maxBytes);
          break;
        }
        contents.append(buffer, static_cast<size_t>(n));
      }
    }
    ::close(fd);
    if (!why.empty()) {
      error = prefix(path, what) + ": " + why;
      return std::nullopt;
    }
    return contents;
  } catch (const std::exception &e) {
    // std::bad_alloc: the size was within the limit but memory is short.
    error = prefix(path, what) + ": " + e.what();
    return std::nullopt;
  }
}

std::optional<std::string> readMlirFile(const std::string &path,
                                        std::string &error) noexcept {
  std::optional<std::string> text =
      readInputFile(path, "input", kMaxModelFileBytes, error);
  if (!text)
    return std::nullopt;
  if (std::string why = checkMlirDepth(*text); !why.empty()) {
    error = path + ": " + why;
    return std::nullopt;
  }
  return text;
}

namespace {

/// The byte at which brackets first nest deeper than `maxDepth`, outside
/// strings; std::string_view::npos if they never do. JSON brackets are
/// [ and {; MLIR's also ( and <, where the > of -> closes nothing, and a
/// // comment runs to the end of its line.
size_t firstTooDeep(std::string_view text, unsigned maxDepth, bool mlir) {
  unsigned depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (mlir && c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      size_t end = text.find('\n', i);
      if (end == std::string_view::npos)
        break;
      i = end;
    } else if (c == '[' || c == '{' || (mlir && (c == '(' || c == '<'))) {
      if (++depth > maxDepth)
        return i;
    } else if ((c == ']' || c == '}' ||
                (mlir &&
                 (c == ')' || (c == '>' && (i == 0 || text[i - 1] != '-'))))) &&
               depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

/// "" when the brackets of `text` stay within `maxDepth`, else "<what> nest
/// deeper than N levels (at byte B)".
std::string depthError(std::string_view text, unsigned maxDepth, bool mlir,
                       const char *what) {
  size_t at = firstTooDeep(text, maxDepth, mlir);
  if (at == std::string_view::npos)
    return "";
  return std::string(what) + " nest deeper than " + std::to_string(maxDepth) +
         " levels (at byte " + std::to_string(at) + ")";
}

} // namespace

std::string checkJsonDepth(std::string_view text, unsigned maxDepth) {
  return depthError(text, maxDepth, /*mlir=*/false, "arrays and objects");
}

std::string checkMlirDepth(std::string_view text, unsigned maxDepth) {
  return depthError(text, maxDepth, /*mlir=*/true, "brackets");
}

} // namespace tessera::support
