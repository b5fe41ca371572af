//===- GraphDialect.cpp - the graph dialect -------------------------------===//

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace loom::graph;

#include "dialects/graph/GraphDialect.cpp.inc"
#include "dialects/graph/GraphEnums.cpp.inc"
#include "dialects/graph/GraphInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/graph/GraphAttrs.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/graph/GraphOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/graph/GraphAttrs.cpp.inc"
      >();
  registerVjpRules(*getContext());
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}
