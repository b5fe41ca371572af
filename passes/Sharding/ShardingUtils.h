//===- ShardingUtils.h - the mesh and its collectives -----------*- C++ -*-===//
//
// The device mesh of a module is one `mesh.mesh @mesh` with a name per
// axis in `loom.axes` ("data", "tensor"); the artifact writer records it
// (Artifact.mesh) and the runtime lays the ranks out row-major over it. The
// sharding passes build MLIR's upstream mesh collectives on tensors with
// these helpers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_SHARDING_SHARDINGUTILS_H
#define LOOM_PASSES_SHARDING_SHARDINGUTILS_H

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace loom::sharding {

inline constexpr llvm::StringLiteral kMeshName = "mesh";
inline constexpr llvm::StringLiteral kAxesAttr = "loom.axes";
/// The ZeRO stage of a data-parallel training step, on the mesh op.
inline constexpr llvm::StringLiteral kZeroAttr = "loom.zero";

/// One named axis of the module's mesh.
struct MeshAxis {
  std::string mesh;  ///< the mesh's symbol name
  int16_t index = 0; ///< the axis's position in the mesh shape
  int64_t size = 1;  ///< ranks along it
};

/// The module's mesh op, or null.
inline mlir::mesh::MeshOp findMesh(mlir::ModuleOp module) {
  return module.lookupSymbol<mlir::mesh::MeshOp>(kMeshName);
}

/// The names of `mesh`'s axes (loom.axes), one per dim of its shape.
inline llvm::SmallVector<std::string> axisNames(mlir::mesh::MeshOp mesh) {
  llvm::SmallVector<std::string> names;
  if (auto axes = mesh->getAttrOfType<mlir::ArrayAttr>(kAxesAttr))
    for (mlir::Attribute a : axes)
      names.push_back(llvm::cast<mlir::StringAttr>(a).getValue().str());
  return names;
}

/// The axis `name` of the module's mesh, if it has one.
inline std::optional<MeshAxis> findAxis(mlir::ModuleOp module,
                                        llvm::StringRef name) {
  mlir::mesh::MeshOp mesh = findMesh(module);
  if (!mesh)
    return std::nullopt;
  llvm::ArrayRef<int64_t> shape = mesh.getShape();
  for (auto [i, n] : llvm::enumerate(axisNames(mesh)))
    if (n == name && i < shape.size())
      return MeshAxis{mesh.getSymName().str(), (int16_t)i, shape[i]};
  return std::nullopt;
}

/// The axis `name` of the module's mesh, appended with `size` ranks (the
/// mesh created) when missing. An error (naming `pass`) when the axis
/// exists with another size.
inline mlir::FailureOr<MeshAxis> getOrCreateAxis(mlir::ModuleOp module,
                                                 llvm::StringRef name,
                                                 int64_t size,
                                                 llvm::StringRef pass) {
  mlir::OpBuilder b(module.getContext());
  mlir::mesh::MeshOp mesh = findMesh(module);
  if (!mesh) {
    b.setInsertionPointToStart(module.getBody());
    mesh = b.create<mlir::mesh::MeshOp>(module.getLoc(), kMeshName,
                                        llvm::ArrayRef<int64_t>{});
    mesh->setAttr(kAxesAttr, b.getStrArrayAttr({}));
  }
  llvm::SmallVector<std::string> names = axisNames(mesh);
  llvm::SmallVector<int64_t> shape(mesh.getShape());
  if (names.size() != shape.size())
    return mesh.emitError() << pass << ": the mesh needs one name per axis ("
                            << kAxesAttr << ")";
  for (auto [i, n] : llvm::enumerate(names)) {
    if (n != name)
      continue;
    if (shape[i] != size)
      return mesh.emitError()
             << pass << ": the mesh's '" << name << "' axis has " << shape[i]
             << " ranks, not " << size;
    return MeshAxis{kMeshName.str(), (int16_t)i, size};
  }
  shape.push_back(size);
  names.push_back(name.str());
  mesh.setShape(shape);
  llvm::SmallVector<llvm::StringRef> refs(names.begin(), names.end());
  mesh->setAttr(kAxesAttr, b.getStrArrayAttr(refs));
  return MeshAxis{kMeshName.str(), (int16_t)(shape.size() - 1), size};
}

inline mlir::FlatSymbolRefAttr meshRef(mlir::OpBuilder &b,
                                       const MeshAxis &axis) {
  return mlir::FlatSymbolRefAttr::get(b.getStringAttr(axis.mesh));
}

/// The sum of `x` over `axis`.
inline mlir::Value allReduce(mlir::OpBuilder &b, mlir::Location loc,
                             const MeshAxis &axis, mlir::Value x) {
  return b.create<mlir::mesh::AllReduceOp>(
      loc, x.getType(), meshRef(b, axis), b.getDenseI16ArrayAttr({axis.index}),
      x,
      mlir::mesh::ReductionKindAttr::get(b.getContext(),
                                         mlir::mesh::ReductionKind::Sum));
}

/// `x`'s dim `dim` with `axis.size` times fewer elements.
inline mlir::RankedTensorType splitType(mlir::Value x, int64_t dim,
                                        int64_t parts) {
  auto type = llvm::cast<mlir::RankedTensorType>(x.getType());
  llvm::SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= parts;
  return type.clone(shape);
}

/// The sum of `x` over `axis`, of which this rank keeps its chunk of dim
/// `dim`.
inline mlir::Value reduceScatter(mlir::OpBuilder &b, mlir::Location loc,
                                 const MeshAxis &axis, mlir::Value x,
                                 int64_t dim) {
  return b.create<mlir::mesh::ReduceScatterOp>(
      loc, splitType(x, dim, axis.size), meshRef(b, axis),
      b.getDenseI16ArrayAttr({axis.index}), x,
      mlir::mesh::ReductionKindAttr::get(b.getContext(),
                                         mlir::mesh::ReductionKind::Sum),
      b.getIndexAttr(dim));
}

/// This rank's chunk of dim `dim` of `x` (no communication).
inline mlir::Value allSlice(mlir::OpBuilder &b, mlir::Location loc,
                            const MeshAxis &axis, mlir::Value x, int64_t dim) {
  return b.create<mlir::mesh::AllSliceOp>(
      loc, splitType(x, dim, axis.size), meshRef(b, axis),
      b.getDenseI16ArrayAttr({axis.index}), x, b.getIndexAttr(dim));
}

/// The ranks' `x` concatenated along dim `dim`.
inline mlir::Value allGather(mlir::OpBuilder &b, mlir::Location loc,
                             const MeshAxis &axis, mlir::Value x, int64_t dim) {
  auto type = llvm::cast<mlir::RankedTensorType>(x.getType());
  llvm::SmallVector<int64_t> shape(type.getShape());
  shape[dim] *= axis.size;
  return b.create<mlir::mesh::AllGatherOp>(
      loc, type.clone(shape), meshRef(b, axis),
      b.getDenseI16ArrayAttr({axis.index}), x, b.getIndexAttr(dim));
}

/// `graph.shard` of a ZeRO gradient or slot: a flat shard over the data
/// axis of a tensor of `shape`.
inline mlir::DictionaryAttr shardAttr(mlir::MLIRContext *ctx,
                                      llvm::ArrayRef<int64_t> shape) {
  mlir::Builder b(ctx);
  return b.getDictionaryAttr(
      {b.getNamedAttr("axis", b.getStringAttr("data")),
       b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))});
}

} // namespace loom::sharding

#endif // LOOM_PASSES_SHARDING_SHARDINGUTILS_H
