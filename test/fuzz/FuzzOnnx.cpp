//===- FuzzOnnx.cpp - libFuzzer target: the ONNX importer -----------------===//
//
// Feeds bytes to the ONNX importer as loomc does for a binary model: parse
// a ModelProto, import it into graph IR (every node through the op table
// and the GraphBuilder's shape rules), verify what comes out. Inputs whose
// first byte is odd are imported for training (initializers as
// parameters, a static batch), the others for inference. External data is
// looked up in a folder that does not exist; the limits are lowered so
// that a model cannot ask for more memory than the fuzzer allows.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  onnx::ModelProto model;
  if (size > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(data, static_cast<int>(size)))
    return 0;
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  bool diagnosed = false;
  mlir::ScopedDiagnosticHandler quiet(&ctx, [&](mlir::Diagnostic &d) {
    diagnosed |= d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  loom::onnx_import::ImportOptions options;
  options.modelDir = "/nonexistent/loom-fuzz";
  options.maxTensorBytes = 64 << 20;
  options.maxNodes = 10000;
  if (size && (data[0] & 1)) {
    options.initializersAsParams = true;
    options.batch = 2;
  }
  auto module = loom::onnx_import::importModel(ctx, model, options);
  if (failed(module)) {
    if (!diagnosed)
      std::abort(); // a failure must say why
    return 0;
  }
  (void)mlir::verify(**module);
  return 0;
}
