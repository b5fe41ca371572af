//===- GraphDialect.h - the graph dialect -----------------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_GRAPH_GRAPHDIALECT_H
#define LOOM_DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/graph/GraphDialect.h.inc"

#endif // LOOM_DIALECTS_GRAPH_GRAPHDIALECT_H
