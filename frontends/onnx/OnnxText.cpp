//===- OnnxText.cpp - read ONNX files, binary or text; check models -------===//
//
// Compiled with exceptions: ONNX's text parser and checker throw.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

using namespace mlir;

LogicalResult loom::onnx_import::readModelFile(MLIRContext &ctx, StringRef path,
                                               onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return emitError(loc) << "cannot read ONNX file '" << path
                          << "': " << buffer.getError().message();
  StringRef data = (*buffer)->getBuffer();
  if (path.ends_with(".onnxtext") || path.ends_with(".txt")) {
    try {
      auto status = onnx::OnnxParser::Parse(model, data.str().c_str());
      if (!status.IsOK())
        return emitError(loc) << "malformed ONNX text file '" << path
                              << "': " << status.ErrorMessage();
    } catch (const std::exception &e) {
      return emitError(loc)
             << "malformed ONNX text file '" << path << "': " << e.what();
    }
    return success();
  }
  if (data.size() > (size_t)INT_MAX)
    return emitError(loc) << "ONNX file '" << path
                          << "' is over 2 GiB: keep the weights in external "
                             "data files";
  if (!model.ParseFromArray(data.data(), (int)data.size()))
    return emitError(loc) << "malformed or truncated ONNX file '" << path
                          << "' (" << data.size()
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
