//===- OnnxModel.cpp - element access and the safetensors writer ----------===//
//
// Plain C++ (no ONNX library): the data helpers of OnnxModel.h and a small
// self-contained safetensors writer for `--weights-out`.
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/OnnxModel.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace tessera::onnx_import {

std::string dtypeName(DType t) {
  switch (t) {
  case DType::Undefined:
    return "UNDEFINED";
  case DType::Float:
    return "FLOAT";
  case DType::UInt8:
    return "UINT8";
  case DType::Int8:
    return "INT8";
  case DType::UInt16:
    return "UINT16";
  case DType::Int16:
    return "INT16";
  case DType::Int32:
    return "INT32";
  case DType::Int64:
    return "INT64";
  case DType::String:
    return "STRING";
  case DType::Bool:
    return "BOOL";
  case DType::Float16:
    return "FLOAT16";
  case DType::Double:
    return "DOUBLE";
  case DType::UInt32:
    return "UINT32";
  case DType::UInt64:
    return "UINT64";
  case DType::Complex64:
    return "COMPLEX64";
  case DType::Complex128:
    return "COMPLEX128";
  case DType::BFloat16:
    return "BFLOAT16";
  }
  return "dtype " + std::to_string(static_cast<int32_t>(t));
}

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::Float:
  case DType::Int32:
  case DType::UInt32:
    return 4;
  case DType::UInt8:
  case DType::Int8:
  case DType::Bool:
    return 1;
  case DType::UInt16:
  case DType::Int16:
  case DType::Float16:
  case DType::BFloat16:
    return 2;
  case DType::Int64:
  case DType::UInt64:
  case DType::Double:
  case DType::Complex64:
    return 8;
  case DType::Complex128:
    return 16;
  default:
    return 0;
  }
}

bool isIntegerDType(DType t) {
  switch (t) {
  case DType::UInt8:
  case DType::Int8:
  case DType::UInt16:
  case DType::Int16:
  case DType::Int32:
  case DType::Int64:
  case DType::UInt32:
  case DType::UInt64:
    return true;
  default:
    return false;
  }
}

bool isFloatDType(DType t) {
  return t == DType::Float || t == DType::Float16 || t == DType::BFloat16 ||
         t == DType::Double;
}

//===----------------------------------------------------------------------===//
// Half-precision conversions (host is little-endian, as ONNX raw data)
//===----------------------------------------------------------------------===//

namespace {
float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: renormalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (absx < 0x38800000u) { // result is subnormal or zero
    float a;
    std::memcpy(&a, &absx, 4);
    // Scale so that the half subnormal unit becomes 1, round to nearest even.
    float scaled = a * 16777216.0f; // 2^24
    uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
    ++h; // may carry into the exponent, which is correct
  return static_cast<uint16_t>(sign | h);
}

float bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

template <typename T> T load(const std::string &data, int64_t i) {
  T v;
  std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T> void store(std::string &data, int64_t i, T v) {
  std::memcpy(data.data() + i * sizeof(T), &v, sizeof(T));
}
} // namespace

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

int64_t Tensor::numElements() const {
  // Saturated at INT64_MAX: dims come from the file, and a count that large
  // never matches the data's size.
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

int64_t Tensor::getInt(int64_t i) const {
  switch (dtype) {
  case DType::Int64:
    return load<int64_t>(data, i);
  case DType::Int32:
    return load<int32_t>(data, i);
  case DType::Int16:
    return load<int16_t>(data, i);
  case DType::Int8:
    return load<int8_t>(data, i);
  case DType::UInt8:
  case DType::Bool:
    return load<uint8_t>(data, i);
  case DType::UInt16:
    return load<uint16_t>(data, i);
  case DType::UInt32:
    return load<uint32_t>(data, i);
  case DType::UInt64:
    return static_cast<int64_t>(load<uint64_t>(data, i));
  default:
    return static_cast<int64_t>(getDouble(i));
  }
}

double Tensor::getDouble(int64_t i) const {
  switch (dtype) {
  case DType::Float:
    return load<float>(data, i);
  case DType::Double:
    return load<double>(data, i);
  case DType::Float16:
    return halfToFloat(load<uint16_t>(data, i));
  case DType::BFloat16:
    return bf16ToFloat(load<uint16_t>(data, i));
  case DType::UInt64:
    return static_cast<double>(load<uint64_t>(data, i));
  case DType::Int64:
  case DType::Int32:
  case DType::Int16:
  case DType::Int8:
  case DType::UInt8:
  case DType::Bool:
  case DType::UInt16:
  case DType::UInt32:
    return static_cast<double>(getInt(i));
  default:
    return 0; // strings, complex: the folder never reads them
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  switch (dtype) {
  case DType::Int64:
  case DType::UInt64:
    return store<int64_t>(data, i, v);
  case DType::Int32:
  case DType::UInt32:
    return store<int32_t>(data, i, static_cast<int32_t>(v));
  case DType::Int16:
  case DType::UInt16:
    return store<int16_t>(data, i, static_cast<int16_t>(v));
  case DType::Int8:
  case DType::UInt8:
    return store<int8_t>(data, i, static_cast<int8_t>(v));
  case DType::Bool:
    return store<uint8_t>(data, i, v != 0);
  default:
    return setDouble(i, static_cast<double>(v));
  }
}

void Tensor::setDouble(int64_t i, double v) {
  switch (dtype) {
  case DType::Float:
    return store<float>(data, i, static_cast<float>(v));
  case DType::Double:
    return store<double>(data, i, v);
  case DType::Float16:
    return store<uint16_t>(data, i, floatToHalf(static_cast<float>(v)));
  case DType::BFloat16:
    return store<uint16_t>(data, i, floatToBf16(static_cast<float>(v)));
  case DType::Bool:
    return store<uint8_t>(data, i, v != 0);
  default:
    // Float to integer truncates toward zero (ONNX Cast).
    return setInt(i, std::isfinite(v) ? static_cast<int64_t>(v) : 0);
  }
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(t.numElements()) * dtypeSize(dtype), '\0');
  return t;
}

Tensor Tensor::fromInts(const std::vector<int64_t> &values) {
  Tensor t = zeros(DType::Int64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.setInt(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> v(static_cast<size_t>(numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = getInt(static_cast<int64_t>(i));
  return v;
}

//===----------------------------------------------------------------------===//
// ValueType, Node, Model
//===----------------------------------------------------------------------===//

bool ValueType::isStatic() const {
  if (!isTensor || !hasShape)
    return false;
  for (int64_t d : shape)
    if (d < 0)
      return false;
  return true;
}

std::string ValueType::str() const {
  if (!isTensor)
    return "a non-tensor value";
  std::string s = dtypeName(dtype);
  if (!hasShape)
    return s + "[unknown rank]";
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

const Attribute *Node::getAttribute(const std::string &attrName) const {
  for (const Attribute &a : attributes)
    if (a.name == attrName)
      return &a;
  return nullptr;
}

int64_t Model::opsetVersion(const std::string &domain) const {
  auto it = opsetImports.find(domain == "ai.onnx" ? "" : domain);
  return it == opsetImports.end() ? 0 : it->second;
}

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

std::string safetensorsDType(DType t) {
  switch (t) {
  case DType::Float:
    return "F32";
  case DType::Float16:
    return "F16";
  case DType::BFloat16:
    return "BF16";
  case DType::Double:
    return "F64";
  case DType::Int64:
    return "I64";
  case DType::Int32:
    return "I32";
  case DType::Int16:
    return "I16";
  case DType::Int8:
    return "I8";
  case DType::UInt8:
    return "U8";
  case DType::UInt16:
    return "U16";
  case DType::UInt32:
    return "U32";
  case DType::UInt64:
    return "U64";
  case DType::Bool:
    return "BOOL";
  default:
    return "";
  }
}

namespace {
std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
} // namespace

bool writeSafetensors(const std::string &path,
                      const std::vector<const Tensor *> &tensors,
                      std::string &error) {
  std::string header = "{";
  size_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &t = *tensors[i];
    std::string dt = safetensorsDType(t.dtype);
    if (dt.empty()) {
      error = "tensor '" + t.name + "' has element type " + dtypeName(t.dtype) +
              ", which safetensors cannot store";
      return false;
    }
    if (i)
      header += ",";
    header += jsonString(t.name) + ":{\"dtype\":\"" + dt + "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d)
      header += (d ? "," : "") + std::to_string(t.shape[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  header += "}";
  // Pad with spaces so that the data starts 8-byte aligned.
  while ((8 + header.size()) % 8)
    header += ' ';

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = "cannot open '" + path + "' for writing";
    return false;
  }
  uint64_t n = header.size();
  unsigned char len[8];
  for (int b = 0; b < 8; ++b)
    len[b] = static_cast<unsigned char>(n >> (8 * b));
  out.write(reinterpret_cast<const char *>(len), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const Tensor *t : tensors)
    out.write(t->data.data(), static_cast<std::streamsize>(t->data.size()));
  out.close();
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

} // namespace tessera::onnx_import
