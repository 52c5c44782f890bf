//===- InputFile.h - Reading user input files safely ------------*- C++ -*-===//
//
// Every file a user names on a command line (plan files, placements, Piper
// inputs, device specs, profile databases, ONNX models) goes through here
// before it is parsed. A path may name anything: a directory, a device such
// as /dev/zero (endless), a FIFO (blocks), or a huge file (exhausts memory),
// and a JSON parser may recurse once per nesting level. These checks turn
// each of those into an error message naming the path.
//
// This header has no exceptions in its interface, so that code built with
// -fno-exceptions (the MLIR passes, tessera-compile) can call it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SUPPORT_INPUTFILE_H
#define TESSERA_SUPPORT_INPUTFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::support {

/// The largest JSON input a reader accepts: 64 MiB. The largest input in the
/// repository (bench/workloads/piper/resnet.json) has 160 KiB; the limit only
/// keeps a mistaken path (a log, a model, a disk image) from exhausting
/// memory.
constexpr uint64_t kMaxJsonFileBytes = uint64_t(64) << 20;

/// The largest ONNX model: 2 GiB, protobuf's limit on one message (larger
/// models keep their weights in external data files).
constexpr uint64_t kMaxModelFileBytes = uint64_t(2) << 30;

/// The deepest nesting of JSON arrays and objects a reader accepts. The
/// formats read here need at most 6 levels (a Piper node's sync map); 64
/// leaves room for any hand-written file and keeps every recursive walk of
/// the parsed value shallow.
constexpr unsigned kMaxJsonDepth = 64;

/// Checks that `path` names a regular file of at most `maxBytes` bytes.
/// Returns "" when it does, else a message naming `what` and the path, e.g.
/// "cannot read plan file 'p.json': it is a directory". Directories,
/// devices, FIFOs and sockets are refused: reading them would fail, block or
/// never end.
std::string checkInputFile(const std::string &path, std::string_view what,
                           uint64_t maxBytes);

/// Reads the whole of a regular file of at most `maxBytes` bytes (see
/// checkInputFile). Returns its contents, or std::nullopt with `error` set
/// to a message naming `what` and the path. Never throws.
std::optional<std::string> readInputFile(const std::string &path,
                                         std::string_view what,
                                         uint64_t maxBytes,
                                         std::string &error) noexcept;

/// Checks, without recursion and before any parser sees the text, that
/// JSON arrays and objects nest at most `maxDepth` deep (brackets inside
/// strings do not count). Returns "" or a message giving the byte offset
/// where the limit is crossed.
std::string checkJsonDepth(std::string_view text,
                           unsigned maxDepth = kMaxJsonDepth);

/// The deepest bracket nesting accepted in .mlir text: real IR nests a few
/// dozen levels (regions, attributes, types); MLIR's parser recurses once
/// per level with no limit of its own, so thousands of levels overflow the
/// stack.
constexpr unsigned kMaxMlirDepth = 256;

/// The same check for MLIR's textual IR: (), [], {} and <> (not the '>' of
/// '->') nest at most `maxDepth` deep, outside string literals and `//`
/// comments. Returns "" or a message giving the byte offset.
std::string checkMlirDepth(std::string_view text,
                           unsigned maxDepth = kMaxMlirDepth);

/// Reads a .mlir file for MLIR's parser: readInputFile with the model size
/// limit, then checkMlirDepth. On failure returns std::nullopt with `error`
/// set ("<path>: brackets nest deeper than ..." for the depth). The tools
/// that parse user IR (tessera-opt, tessera-interp, tessera-translate) read
/// it through here.
std::optional<std::string> readMlirFile(const std::string &path,
                                        std::string &error) noexcept;

/// The most devices a job may have (--devices, a plan's mesh): Tessera
/// emits, and the user builds, one C++ program per device, so a mistyped
/// count (a million) would fill the disk rather than fail. 4096 covers the
/// clusters the runtime's MPI and NCCL back-ends are meant for.
constexpr int64_t kMaxDevices = 4096;

/// a * b, or std::nullopt when the product overflows int64_t. Every product
/// of user-given integers (mesh sizes, micro-batches) is formed through it.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

} // namespace tessera::support

#endif // TESSERA_SUPPORT_INPUTFILE_H
