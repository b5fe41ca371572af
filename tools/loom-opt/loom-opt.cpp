//===- loom-opt.cpp - the IR driver for Loom's lit tests ------------------===//
//
// mlir-opt with Loom's dialects and passes: parses, verifies, runs passes
// and prints IR. `loom-opt --help` lists the registered dialects and passes.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  loom::registerAllDialects(registry);
  loom::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Loom optimizer driver\n", registry));
}
