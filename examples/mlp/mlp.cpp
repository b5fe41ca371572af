//===- mlp.cpp - build an MLP classifier and print its IR -----------------===//
//
// loom-example-mlp [--inputs N] [--hidden 256,256] [--classes K]
//                  [--batch B] [--no-loss]
// Builds the model with the GraphBuilder, verifies it and prints the graph
// IR on stdout.
//
//===----------------------------------------------------------------------===//

#include "examples/models/Models.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  cl::opt<int64_t> inputs("inputs", cl::desc("input features"), cl::init(784));
  cl::list<int64_t> hidden("hidden", cl::desc("hidden widths"),
                           cl::CommaSeparated);
  cl::opt<int64_t> classes("classes", cl::desc("output classes"), cl::init(10));
  cl::opt<int64_t> batch("batch", cl::desc("batch size, 0 for dynamic"),
                         cl::init(0));
  cl::opt<bool> noLoss("no-loss", cl::desc("logits only, no loss output"));
  cl::ParseCommandLineOptions(argc, argv, "Loom MLP example\n");

  loom::models::MLPConfig config;
  config.inputs = inputs;
  if (!hidden.empty())
    config.hidden.assign(hidden.begin(), hidden.end());
  config.classes = classes;
  config.batch = batch > 0 ? (int64_t)batch : loom::kDyn;
  config.withLoss = !noLoss;

  mlir::MLIRContext ctx;
  loom::GraphBuilder b(ctx, "forward");
  loom::models::buildMLP(b, config);
  auto module = b.finish();
  if (failed(module)) {
    llvm::errs() << "error: " << b.error() << "\n";
    return 1;
  }
  (*module)->print(llvm::outs());
  return 0;
}
