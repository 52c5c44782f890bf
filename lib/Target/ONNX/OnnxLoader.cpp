//===- OnnxLoader.cpp - parse, check and shape-infer an ONNX model --------===//
//
// The only file that sees protobuf and the ONNX library. It is compiled with
// exceptions (a plain add_library target): every exception the ONNX library
// throws is caught here and becomes an error string.
//
//===----------------------------------------------------------------------===//

#include "tessera/Support/InputFile.h"
#include "tessera/Target/ONNX/OnnxModel.h"

#include "onnx/checker.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace tessera::onnx_import {
namespace {

std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

template <typename T> void appendRaw(std::string &out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

/// Reads a tensor stored with data_location EXTERNAL into raw_data, so that
/// the checker and everything after it see an ordinary tensor.
bool loadExternalData(onnx::TensorProto &t, const std::string &modelDir,
                      std::string &error) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : t.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoll(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (const std::exception &) {
      error = "tensor '" + t.name() + "': bad external_data entry '" +
              kv.key() + "' = '" + kv.value() + "'";
      return false;
    }
  }
  if (location.empty()) {
    error = "tensor '" + t.name() + "' has external data without a location";
    return false;
  }
  // As the ONNX checker: the data file lies beside the model, never above.
  if (location[0] == '/' || location.find("..") != std::string::npos) {
    error = "tensor '" + t.name() + "': external data location '" + location +
            "' must be a relative path inside the model's directory";
    return false;
  }
  std::string file = modelDir + "/" + location;
  // A FIFO or device named as data would block or never end. Its size is
  // not limited here (external data exists for weights over protobuf's
  // 2 GiB); the requested range is checked against it below.
  if (std::string why = support::checkInputFile(
          file, "external data file", std::numeric_limits<uint64_t>::max());
      !why.empty()) {
    error = "tensor '" + t.name() + "': " + why;
    return false;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    error = "tensor '" + t.name() + "': cannot open external data file '" +
            file + "'";
    return false;
  }
  in.seekg(0, std::ios::end);
  int64_t fileSize = static_cast<int64_t>(in.tellg());
  if (length < 0)
    length = fileSize - offset;
  if (offset < 0 || length < 0 || offset + length > fileSize) {
    error = "tensor '" + t.name() + "': external data range [" +
            std::to_string(offset) + ", " + std::to_string(offset + length) +
            ") lies outside '" + file + "' (" + std::to_string(fileSize) +
            " bytes)";
    return false;
  }
  std::string data(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(data.data(), length);
  if (!in) {
    error = "tensor '" + t.name() + "': cannot read external data from '" +
            file + "'";
    return false;
  }
  t.set_raw_data(std::move(data));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return true;
}

bool loadExternalInGraph(onnx::GraphProto &g, const std::string &dir,
                         std::string &error);

bool loadExternalInNode(onnx::NodeProto &n, const std::string &dir,
                        std::string &error) {
  for (auto &a : *n.mutable_attribute()) {
    if (a.has_t() && a.t().data_location() == onnx::TensorProto::EXTERNAL &&
        !loadExternalData(*a.mutable_t(), dir, error))
      return false;
    for (auto &t : *a.mutable_tensors())
      if (t.data_location() == onnx::TensorProto::EXTERNAL &&
          !loadExternalData(t, dir, error))
        return false;
    if (a.has_g() && !loadExternalInGraph(*a.mutable_g(), dir, error))
      return false;
    for (auto &g : *a.mutable_graphs())
      if (!loadExternalInGraph(g, dir, error))
        return false;
  }
  return true;
}

bool loadExternalInGraph(onnx::GraphProto &g, const std::string &dir,
                         std::string &error) {
  for (auto &t : *g.mutable_initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL &&
        !loadExternalData(t, dir, error))
      return false;
  for (auto &n : *g.mutable_node())
    if (!loadExternalInNode(n, dir, error))
      return false;
  return true;
}

/// TensorProto -> Tensor with raw little-endian data, whichever typed field
/// the producer used.
bool convertTensor(onnx::TensorProto &p, Tensor &t, std::string &error) {
  t.name = p.name();
  t.dtype = static_cast<DType>(p.data_type());
  t.shape.assign(p.dims().begin(), p.dims().end());
  std::string what = "tensor '" + p.name() + "'";
  if (p.has_segment()) {
    error = what + ": segmented tensors are not supported";
    return false;
  }
  for (int64_t d : t.shape)
    if (d < 0) {
      error = what + " has a negative dimension";
      return false;
    }
  if (t.dtype == DType::String) {
    // Strings have no byte layout; only the dtype and shape travel, and
    // the importer rejects any use that needs the data.
    return true;
  }
  size_t elemSize = dtypeSize(t.dtype);
  if (elemSize == 0) {
    error = what + " has unsupported element type " + dtypeName(t.dtype);
    return false;
  }
  int64_t n = t.numElements();
  if (p.has_raw_data()) {
    t.data.swap(*p.mutable_raw_data());
  } else {
    switch (t.dtype) {
    case DType::Float:
      for (float v : p.float_data())
        appendRaw(t.data, v);
      break;
    case DType::Complex64:
      for (float v : p.float_data())
        appendRaw(t.data, v);
      break;
    case DType::Double:
    case DType::Complex128:
      for (double v : p.double_data())
        appendRaw(t.data, v);
      break;
    case DType::Int64:
      for (int64_t v : p.int64_data())
        appendRaw(t.data, v);
      break;
    case DType::UInt32:
    case DType::UInt64:
      for (uint64_t v : p.uint64_data()) {
        if (t.dtype == DType::UInt32)
          appendRaw(t.data, static_cast<uint32_t>(v));
        else
          appendRaw(t.data, v);
      }
      break;
    case DType::Int32:
      for (int32_t v : p.int32_data())
        appendRaw(t.data, v);
      break;
    case DType::Int16:
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:
      // onnx.proto: these are stored one per int32_data entry (low bits).
      for (int32_t v : p.int32_data())
        appendRaw(t.data, static_cast<uint16_t>(v));
      break;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      for (int32_t v : p.int32_data())
        appendRaw(t.data, static_cast<uint8_t>(v));
      break;
    default:
      break;
    }
  }
  if (t.data.size() != static_cast<size_t>(n) * elemSize) {
    error = what + " has " + std::to_string(t.data.size()) +
            " bytes of data, but its shape and type need " +
            std::to_string(static_cast<size_t>(n) * elemSize);
    return false;
  }
  return true;
}

ValueType convertType(const onnx::TypeProto &tp) {
  ValueType vt;
  if (tp.value_case() != onnx::TypeProto::kTensorType)
    return vt;
  vt.isTensor = true;
  vt.dtype = static_cast<DType>(tp.tensor_type().elem_type());
  if (!tp.tensor_type().has_shape())
    return vt;
  vt.hasShape = true;
  for (const auto &d : tp.tensor_type().shape().dim())
    vt.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return vt;
}

bool convertAttribute(onnx::AttributeProto &a, Attribute &out,
                      std::string &error) {
  out.name = a.name();
  out.kindName = onnx::AttributeProto::AttributeType_Name(a.type());
  switch (a.type()) {
  case onnx::AttributeProto::FLOAT:
    out.kind = Attribute::Float;
    out.f = a.f();
    break;
  case onnx::AttributeProto::INT:
    out.kind = Attribute::Int;
    out.i = a.i();
    break;
  case onnx::AttributeProto::STRING:
    out.kind = Attribute::String;
    out.s = a.s();
    break;
  case onnx::AttributeProto::TENSOR:
    out.kind = Attribute::Tensor_;
    return convertTensor(*a.mutable_t(), out.t, error);
  case onnx::AttributeProto::FLOATS:
    out.kind = Attribute::Floats;
    out.floats.assign(a.floats().begin(), a.floats().end());
    break;
  case onnx::AttributeProto::INTS:
    out.kind = Attribute::Ints;
    out.ints.assign(a.ints().begin(), a.ints().end());
    break;
  case onnx::AttributeProto::STRINGS:
    out.kind = Attribute::Strings;
    out.strings.assign(a.strings().begin(), a.strings().end());
    break;
  default:
    // Graphs, sparse tensors, type protos: the importer rejects the node if
    // it has to read one; it only needs the kind's name for the message.
    out.kind = Attribute::Other;
    break;
  }
  return true;
}

bool convertModel(onnx::ModelProto &m, Model &model, std::string &error) {
  model.irVersion = m.ir_version();
  model.producerName = m.producer_name();
  model.producerVersion = m.producer_version();
  for (const auto &op : m.opset_import())
    model.opsetImports[op.domain() == "ai.onnx" ? "" : op.domain()] =
        op.version();
  for (const auto &prop : m.metadata_props())
    model.metadata[prop.key()] = prop.value();
  onnx::GraphProto &g = *m.mutable_graph();

  for (auto &init : *g.mutable_initializer()) {
    Tensor t;
    if (!convertTensor(init, t, error))
      return false;
    ValueType vt;
    vt.isTensor = true;
    vt.dtype = t.dtype;
    vt.hasShape = true;
    vt.shape = t.shape;
    model.valueTypes[t.name] = vt;
    model.initializers.push_back(std::move(t));
  }
  auto addInfo = [&](const onnx::ValueInfoProto &vi) {
    ValueInfo info{vi.name(), convertType(vi.type())};
    // Shape inference merges into value_info; a graph input or output
    // declared without a shape may still get one there, so prefer the most
    // precise entry.
    auto it = model.valueTypes.find(vi.name());
    if (it == model.valueTypes.end() || !it->second.hasShape)
      model.valueTypes[vi.name()] = info.type;
    return info;
  };
  for (const auto &vi : g.value_info())
    addInfo(vi);
  for (const auto &vi : g.input())
    model.inputs.push_back(addInfo(vi));
  for (const auto &vi : g.output())
    model.outputs.push_back(addInfo(vi));

  for (auto &np : *g.mutable_node()) {
    Node n;
    n.name = np.name();
    n.opType = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (auto &a : *np.mutable_attribute()) {
      Attribute attr;
      if (!convertAttribute(a, attr, error)) {
        error = "node '" + np.name() + "' (op " + np.op_type() +
                "), attribute '" + a.name() + "': " + error;
        return false;
      }
      n.attributes.push_back(std::move(attr));
    }
    model.nodes.push_back(std::move(n));
  }
  return true;
}

} // namespace

bool loadModel(const char *bytes, size_t size, const std::string &path,
               const LoadOptions &options, Model &model, std::string &error) {
  model = Model();
  model.path = path;
  std::string prefix = "cannot parse ONNX model '" + path + "': ";
  if (size == 0) {
    error = prefix + "the file is empty";
    return false;
  }
  if (size > static_cast<size_t>(INT_MAX)) {
    // protobuf cannot parse messages of 2 GiB or more; such models keep
    // their weights as external data.
    error = prefix + "the file is 2 GiB or larger; save the model with "
                     "external data (onnx.save_model(..., "
                     "save_as_external_data=True))";
    return false;
  }
  try {
    onnx::ModelProto m;
    google::protobuf::io::ArrayInputStream raw(bytes, static_cast<int>(size));
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    if (!m.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
      error = prefix + "not a valid ONNX protobuf (corrupt or truncated file)";
      return false;
    }
    if (!m.has_graph()) {
      error = prefix + "the model has no graph (corrupt or truncated file?)";
      return false;
    }
    if (!loadExternalInGraph(*m.mutable_graph(), dirName(path), error)) {
      return false;
    }
    if (options.check) {
      try {
        onnx::checker::check_model(m);
      } catch (const std::exception &e) {
        error = std::string("the ONNX checker rejects the model: ") + e.what();
        return false;
      }
    }
    if (options.inferShapes) {
      try {
        // Strict: a node whose shapes cannot be inferred is an error here,
        // with ONNX's own message, rather than a dynamic dim later.
        // Data propagation lets Shape -> Gather -> Reshape chains give
        // static shapes.
        onnx::ShapeInferenceOptions opts(/*check_type=*/true,
                                         /*strict_mode=*/1,
                                         /*data_prop=*/true);
        onnx::shape_inference::InferShapes(
            m, onnx::OpSchemaRegistry::Instance(), opts);
      } catch (const std::exception &e) {
        error = std::string("ONNX shape inference failed: ") + e.what();
        return false;
      }
    }
    if (!convertModel(m, model, error))
      return false;
  } catch (const std::exception &e) {
    // Anything else the libraries throw (bad_alloc on absurd sizes, ...).
    error = prefix + e.what();
    return false;
  }
  return true;
}

bool loadModelFile(const std::string &path, const LoadOptions &options,
                   Model &model, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open ONNX model '" + path + "'";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  return loadModel(bytes.data(), bytes.size(), path, options, model, error);
}

} // namespace tessera::onnx_import
