//===- ExecDialect.cpp - the exec dialect ---------------------------------===//

#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/ExecOps.h"

using namespace mlir;
using namespace loom::exec;

#include "dialects/exec/ExecDialect.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/exec/ExecOps.cpp.inc"
      >();
}
