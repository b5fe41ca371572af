//===- gpt2.cpp - build a GPT-2-style decoder and print its IR ------------===//
//
// loom-example-gpt2 [--layers N] [--embed C] [--heads H] [--vocab V]
//                   [--seq T] [--batch B] [--dropout P] [--no-loss]
//                   [--init SEED]
// Builds the model with the GraphBuilder, verifies it and prints the graph
// IR on stdout; a summary goes to stderr. `--init SEED` gives every
// parameter an initial value (GPT-2's initialization, drawn with SEED), so
// that `loomc train` trains the model from scratch. The default is a small
// model;
// `--layers 12 --embed 768 --heads 12 --vocab 50257 --seq 1024` is GPT-2
// small.
//
//===----------------------------------------------------------------------===//

#include "examples/models/Models.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

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
  (*module)->print(llvm::outs());
  llvm::errs() << "gpt2: " << config.layers << " layers, "
               << loom::models::gpt2ParameterCount(config) << " parameters"
               << (config.initSeed ? ", initialized" : "") << ", IR verified\n";
  return 0;
}
