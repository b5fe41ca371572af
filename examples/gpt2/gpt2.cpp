//===- gpt2.cpp - build a GPT-2-style decoder and print its IR ------------===//
//
// loom-example-gpt2 [--layers N] [--embed C] [--heads H] [--vocab V]
//                   [--seq T] [--batch B] [--dropout P] [--no-loss]
//                   [--init SEED] [--summary]
// Builds the model with the GraphBuilder, verifies it and prints the graph
// IR on stdout; a one-line summary goes to stderr. `--summary` prints what
// the IR holds instead of its text: the inputs and outputs, the parameters
// and the graph ops by name with their counts. `--init SEED` gives every
// parameter an initial value (GPT-2's initialization, drawn with SEED), so
// that `loomc train` trains the model from scratch. The default is a small
// model;
// `--layers 12 --embed 768 --heads 12 --vocab 50257 --seq 1024` is GPT-2
// small.
//
//===----------------------------------------------------------------------===//

#include "examples/models/Models.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace cl = llvm::cl;

/// Prints the entry function's inputs and outputs, its parameters (the
/// arguments marked `graph.param`: tensors, values and bytes) and the graph
/// ops by name with their counts, in the form of `loomc import
/// --print-summary`.
static void printSummary(mlir::func::FuncOp func, llvm::raw_ostream &os) {
  int64_t tensors = 0, values = 0, bytes = 0;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    auto type =
        llvm::cast<mlir::RankedTensorType>(func.getArgument(i).getType());
    if (auto name = func.getArgAttrOfType<mlir::StringAttr>(i, "graph.input")) {
      os << "input " << name.getValue() << ": " << type << "\n";
      continue;
    }
    if (!func.getArgAttr(i, "graph.param"))
      continue;
    ++tensors;
    values += type.getNumElements();
    unsigned bits = type.getElementType().getIntOrFloatBitWidth();
    bytes += type.getNumElements() * ((bits + 7) / 8);
  }
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    auto name = func.getResultAttrOfType<mlir::StringAttr>(i, "graph.output");
    os << "output " << (name ? name.getValue() : "?") << ": "
       << func.getResultTypes()[i] << "\n";
  }
  std::map<std::string, int64_t> ops;
  int64_t total = 0;
  func.walk([&](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "graph") {
      ++ops[op->getName().getStringRef().str()];
      ++total;
    }
  });
  os << "ops: " << total << "\n";
  for (auto &[name, count] : ops)
    os << "  " << name << ": " << count << "\n";
  os << "parameters: " << values << " in " << tensors << " tensors, " << bytes
     << " bytes\n";
}

int main(int argc, char **argv) {
  cl::opt<int64_t> layers("layers", cl::desc("decoder blocks"), cl::init(2));
  cl::opt<int64_t> embed("embed", cl::desc("embedding width"), cl::init(128));
  cl::opt<int64_t> heads("heads", cl::desc("attention heads"), cl::init(4));
  cl::opt<int64_t> vocab("vocab", cl::desc("vocabulary size"), cl::init(1000));
  cl::opt<int64_t> seq("seq", cl::desc("context length"), cl::init(32));
  cl::opt<int64_t> batch("batch", cl::desc("batch size, 0 for dynamic"),
                         cl::init(0));
  cl::opt<double> dropout("dropout", cl::desc("dropout ratio"), cl::init(0.0));
  cl::opt<bool> noLoss("no-loss", cl::desc("logits only, no loss output"));
  cl::opt<uint32_t> initSeed(
      "init", cl::desc("initial parameter values drawn with this seed"),
      cl::value_desc("SEED"));
  cl::opt<bool> summary(
      "summary", cl::desc("print op counts and parameters instead of the IR"));
  cl::ParseCommandLineOptions(argc, argv, "Loom GPT-2 example\n");

  loom::models::GPT2Config config;
  config.layers = layers;
  config.embed = embed;
  config.heads = heads;
  config.vocab = vocab;
  config.seq = seq;
  config.batch = batch > 0 ? (int64_t)batch : loom::kDyn;
  config.dropout = dropout;
  config.withLoss = !noLoss;
  if (initSeed.getNumOccurrences())
    config.initSeed = initSeed;
  if (heads <= 0 || embed % heads != 0) {
    llvm::errs() << "error: --embed " << embed
                 << " must be a positive multiple of --heads " << heads << "\n";
    return 1;
  }

  mlir::MLIRContext ctx;
  loom::GraphBuilder b(ctx, "forward");
  loom::models::buildGPT2(b, config);
  auto module = b.finish();
  if (failed(module)) {
    llvm::errs() << "error: " << b.error() << "\n";
    return 1;
  }
  if (summary)
    printSummary((*module)->lookupSymbol<mlir::func::FuncOp>("forward"),
                 llvm::outs());
  else
    (*module)->print(llvm::outs());
  llvm::errs() << "gpt2: " << config.layers << " layers, "
               << loom::models::gpt2ParameterCount(config) << " parameters"
               << (config.initSeed ? ", initialized" : "") << ", IR verified\n";
  return 0;
}
