//===- OutlinedConstants.cpp - constants kept out of emitted source -------===//

#include "tessera/Conversion/OutlinedConstants.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

namespace tessera {

bool isOutlinedConstant(DenseElementsAttr value, int64_t above) {
  return value && !value.isSplat() && value.getNumElements() > above;
}

namespace {
template <typename T, typename Bits>
void appendLittleEndian(std::string &out, DenseElementsAttr value) {
  for (T v : value.getValues<T>()) {
    Bits bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (unsigned b = 0; b < sizeof bits; ++b)
      out.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  }
}
} // namespace

std::optional<std::string> constantBytes(DenseElementsAttr value) {
  Type e = value.getElementType();
  std::string out;
  if (e.isF32())
    appendLittleEndian<float, uint32_t>(out, value);
  else if (e.isF64())
    appendLittleEndian<double, uint64_t>(out, value);
  else if (e.isInteger(32))
    appendLittleEndian<int32_t, uint32_t>(out, value);
  else if (e.isInteger(64))
    appendLittleEndian<int64_t, uint64_t>(out, value);
  else if (e.isInteger(1))
    for (bool v : value.getValues<bool>())
      out.push_back(v ? 1 : 0);
  else if (e.isBF16())
    for (const APFloat &v : value.getValues<APFloat>()) {
      uint64_t bits = v.bitcastToAPInt().getZExtValue();
      out.push_back(static_cast<char>(bits & 0xff));
      out.push_back(static_cast<char>((bits >> 8) & 0xff));
    }
  else
    return std::nullopt;
  return out;
}

std::string outlinedConstantKey(DenseElementsAttr value) {
  uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a 64
  auto mix = [&](const std::string &bytes) {
    for (unsigned char c : bytes) {
      hash ^= c;
      hash *= 0x100000001b3ull;
    }
  };
  std::string type;
  llvm::raw_string_ostream os(type);
  os << value.getType() << ";";
  mix(type);
  if (std::optional<std::string> bytes = constantBytes(value))
    mix(*bytes);
  std::string key;
  llvm::raw_string_ostream keyOs(key);
  keyOs << "const." << llvm::format_hex_no_prefix(hash, 16);
  return key;
}

} // namespace tessera
