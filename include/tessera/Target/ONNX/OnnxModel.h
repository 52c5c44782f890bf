//===- OnnxModel.h - an ONNX model as plain C++ data ------------*- C++ -*-===//
//
// The ONNX library (checker, shape inference, protobuf parsing) throws C++
// exceptions, while MLIR-facing code is built with -fno-exceptions. So the
// loader (TesseraOnnxLoader, built with exceptions) parses, checks and
// shape-infers a model and hands the importer this protobuf-free copy; every
// exception becomes an error string. The header needs neither protobuf nor
// exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TARGET_ONNX_ONNXMODEL_H
#define TESSERA_TARGET_ONNX_ONNXMODEL_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::onnx_import {

/// ONNX TensorProto::DataType values (onnx.proto), kept numerically equal.
enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

/// "FLOAT", "INT64", ... as onnx.proto spells them; "dtype N" if unknown.
std::string dtypeName(DType t);
/// Bytes per element; 0 for STRING, UNDEFINED and unknown values.
size_t dtypeSize(DType t);
bool isIntegerDType(DType t); // signed and unsigned integers, not BOOL
bool isFloatDType(DType t);   // FLOAT, FLOAT16, BFLOAT16, DOUBLE

/// A dense tensor with its data as raw little-endian bytes (row-major), the
/// way TensorProto.raw_data stores it, whatever field the file used.
struct Tensor {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  std::string data;

  int64_t numElements() const;
  /// Element i converted to int64 / double (any numeric or BOOL dtype).
  int64_t getInt(int64_t i) const;
  double getDouble(int64_t i) const;
  /// Sets element i from an int64 / double, converting to the dtype
  /// (float16/bfloat16 round to nearest even).
  void setInt(int64_t i, int64_t v);
  void setDouble(int64_t i, double v);
  /// A zero-filled tensor of the given dtype and shape.
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  /// A 1-D INT64 tensor holding `values`.
  static Tensor fromInts(const std::vector<int64_t> &values);
  std::vector<int64_t> toInts() const;
};

/// The type of a value as ONNX knows it (graph inputs, outputs, value_info
/// after shape inference). Unknown dimensions are -1.
struct ValueType {
  bool isTensor = false; // false: unknown, sequence, map, optional...
  DType dtype = DType::Undefined;
  bool hasShape = false;
  std::vector<int64_t> shape;
  bool isStatic() const;
  std::string str() const; // "FLOAT[4, ?, 8]"
};

struct ValueInfo {
  std::string name;
  ValueType type;
};

struct Attribute {
  enum Kind { Float, Int, String, Tensor_, Floats, Ints, Strings, Other };
  std::string name;
  Kind kind = Other;
  std::string kindName; // the ONNX spelling, for diagnostics ("GRAPH", ...)
  double f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name; // as in the file; may be empty
  std::string opType;
  std::string domain;               // "" for the default ONNX domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs; // "" marks an omitted optional output
  std::vector<Attribute> attributes;

  const Attribute *getAttribute(const std::string &attrName) const;
};

struct Model {
  std::string path; // as given to the loader
  int64_t irVersion = 0;
  std::string producerName, producerVersion;
  std::map<std::string, int64_t> opsetImports; // domain -> version
  /// The model's metadata_props (e.g. "tessera.parameters", written by the
  /// exporters in examples/).
  std::map<std::string, std::string> metadata;
  std::vector<Tensor> initializers;       // file order
  std::vector<ValueInfo> inputs, outputs; // graph inputs and outputs
  std::vector<Node> nodes;                // topological (checked)
  /// Every typed value: inputs, outputs, initializers, value_info (after
  /// shape inference).
  std::unordered_map<std::string, ValueType> valueTypes;

  /// Opset version of `domain` ("" and "ai.onnx" are the default domain);
  /// 0 if the model does not import it.
  int64_t opsetVersion(const std::string &domain = "") const;
};

struct LoadOptions {
  bool check = true;       // onnx::checker::check_model
  bool inferShapes = true; // onnx::shape_inference::InferShapes (strict)
};

/// Parses `size` bytes of an ONNX model. `path` names the file in messages
/// and locates external data (relative to its directory). Returns false and
/// sets `error` on a corrupt or truncated file, a checker or shape-inference
/// failure, or unreadable external data; never throws.
bool loadModel(const char *bytes, size_t size, const std::string &path,
               const LoadOptions &options, Model &model, std::string &error);
/// Reads the file first.
bool loadModelFile(const std::string &path, const LoadOptions &options,
                   Model &model, std::string &error);

/// Writes tensors to a safetensors file: u64 little-endian header length N,
/// N bytes of JSON ({"name": {"dtype", "shape", "data_offsets"}}, space-padded
/// so that 8 + N is a multiple of 8), then the raw data in order. Returns
/// false and sets `error` on an I/O failure or a dtype safetensors lacks.
bool writeSafetensors(const std::string &path,
                      const std::vector<const Tensor *> &tensors,
                      std::string &error);
/// "F32", "I64", "BOOL", ...; empty if safetensors has no such dtype.
std::string safetensorsDType(DType t);

} // namespace tessera::onnx_import

#endif // TESSERA_TARGET_ONNX_ONNXMODEL_H
