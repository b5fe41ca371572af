//===- OnnxText.cpp - read ONNX files, binary or text; check models, nodes ===//
//
// Compiled with exceptions: ONNX's text parser, checker and schemas throw.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporterImpl.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

using namespace mlir;

LogicalResult loom::onnx_import::readModelFile(MLIRContext &ctx, StringRef path,
                                               onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  if (path.ends_with(".onnxtext") || path.ends_with(".txt")) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
    if (!buffer)
      return emitError(loc) << "cannot read ONNX file '" << path
                            << "': " << buffer.getError().message();
    try {
      auto status =
          onnx::OnnxParser::Parse(model, (*buffer)->getBuffer().str().c_str());
      if (!status.IsOK())
        return emitError(loc) << "malformed ONNX text file '" << path
                              << "': " << status.ErrorMessage();
    } catch (const std::exception &e) {
      return emitError(loc)
             << "malformed ONNX text file '" << path << "': " << e.what();
    }
    return success();
  }
  // Parsed as it is read, a buffer at a time: the file's bytes are never
  // held beside the message (a model's weights are in memory once).
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    std::string why = fd >= 0 && S_ISDIR(st.st_mode) ? "Is a directory"
                                                     : std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return emitError(loc) << "cannot read ONNX file '" << path << "': " << why;
  }
  google::protobuf::io::FileInputStream in(fd);
  in.SetCloseOnDelete(true);
  if (st.st_size > (off_t)INT_MAX)
    return emitError(loc) << "ONNX file '" << path
                          << "' is over 2 GiB: keep the weights in external "
                             "data files";
  if (!model.ParseFromZeroCopyStream(&in))
    return emitError(loc) << "malformed or truncated ONNX file '" << path
                          << "' (" << st.st_size
                          << " bytes): not a valid ModelProto";
  if (!model.has_graph())
    return emitError(loc) << "ONNX file '" << path << "' has no graph";
  return success();
}

std::string loom::onnx_export::checkModel(const onnx::ModelProto &model) {
  try {
    onnx::checker::check_model(model);
    // Strict shape inference: every node's types and shapes must agree.
    onnx::ModelProto copy = model;
    onnx::ShapeInferenceOptions options{/*check_type=*/true, /*error_mode=*/1,
                                        /*enable_data_propagation=*/false};
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       options);
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

namespace {
/// An ai.onnx op whose schema changed at `opset`, one of 18 to 20 (ONNX's
/// onnx/defs/operator_sets.h): libonnx 1.12's schemas end at opset 17, so
/// they do not describe these ops in a newer model.
struct SchemaChange {
  int64_t opset;
  const char *opType;
};
} // namespace

static const SchemaChange kSchemaChanges[] = {
    {18, "Pad"},
    {18, "CenterCropPad"},
    {18, "Resize"},
    {18, "Mish"},
    {18, "OptionalGetElement"},
    {18, "OptionalHasElement"},
    {18, "Split"},
    {18, "Col2Im"},
    {18, "ScatterND"},
    {18, "ScatterElements"},
    {18, "ReduceSumSquare"},
    {18, "ReduceLogSum"},
    {18, "ReduceLogSumExp"},
    {18, "ReduceL1"},
    {18, "ReduceL2"},
    {18, "ReduceMax"},
    {18, "ReduceMin"},
    {18, "ReduceMean"},
    {18, "ReduceProd"},
    {18, "BitwiseAnd"},
    {18, "BitwiseOr"},
    {18, "BitwiseXor"},
    {18, "BitwiseNot"},
    {18, "GroupNormalization"},
    {18, "LpPool"},
    {19, "Equal"},
    {19, "AveragePool"},
    {19, "Cast"},
    {19, "CastLike"},
    {19, "Constant"},
    {19, "DeformConv"},
    {19, "DequantizeLinear"},
    {19, "Identity"},
    {19, "If"},
    {19, "Loop"},
    {19, "Pad"},
    {19, "QuantizeLinear"},
    {19, "Resize"},
    {19, "Reshape"},
    {19, "Scan"},
    {19, "Shape"},
    {19, "Size"},
    {20, "AffineGrid"},
    {20, "ConstantOfShape"},
    {20, "DFT"},
    {20, "Gelu"},
    {20, "GridSample"},
    {20, "ImageDecoder"},
    {20, "IsInf"},
    {20, "IsNaN"},
    {20, "ReduceMax"},
    {20, "ReduceMin"},
    {20, "RegexFullMatch"},
    {20, "StringConcat"},
    {20, "StringSplit"},
};

std::string loom::onnx_import::checkNodeSchema(const onnx::NodeProto &node,
                                               int64_t opset) {
  assert(opset <= kNewestOpset && "the opset range is checked first");
  const std::string &op = node.op_type();
  int64_t schemasEnd = onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                           .Map()
                           .at(onnx::ONNX_DOMAIN)
                           .second;
  if (opset > schemasEnd) {
    // An op changed after libonnx's newest opset has no schema here; its
    // converter checks what it reads. Any other op is as libonnx knows it.
    for (const SchemaChange &change : kSchemaChanges)
      if (op == change.opType && change.opset > schemasEnd &&
          change.opset <= opset)
        return "";
    opset = schemasEnd;
  }
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(op, (int)opset, onnx::ONNX_DOMAIN);
  // A deprecated form (Upsample-10, Scatter-11) is checked as the form
  // before it, the one its converter reads.
  if (schema && schema->Deprecated())
    schema = onnx::OpSchemaRegistry::Schema(op, schema->SinceVersion() - 1,
                                            onnx::ONNX_DOMAIN);
  if (!schema)
    return "ONNX defines no op '" + op + "' at this opset";
  std::string form = op + "-" + std::to_string(schema->SinceVersion());
  // Attribute types first: Verify's own message names neither type.
  for (const onnx::AttributeProto &a : node.attribute()) {
    auto it = schema->attributes().find(a.name());
    if (it != schema->attributes().end() && a.type() != it->second.type)
      return "attribute '" + a.name() + "' has type " +
             onnx::AttributeProto::AttributeType_Name(a.type()) + "; " + form +
             " defines it as " +
             onnx::AttributeProto::AttributeType_Name(it->second.type);
  }
  try {
    schema->Verify(node);
  } catch (const std::exception &e) {
    return "the node does not match ONNX's schema of " + form + ": " + e.what();
  }
  return "";
}
