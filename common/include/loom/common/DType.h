//===- DType.h - element types as every layer numbers them ------*- C++ -*-===//
//
// Element types numbered as ONNX's TensorProto.DataType: the artifact
// schema's DType (schema/loom_artifact.proto), the runtime's loom_dtype
// (loom/runtime.h) and the tensor files use the same numbers. Header only,
// no protobuf, so code that must not link the schema (the tensor files)
// sizes and names them the same way.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_DTYPE_H
#define LOOM_COMMON_DTYPE_H

#include <cstddef>
#include <cstdint>

namespace loom::dtypes {

enum : int32_t {
  kUndefined = 0,
  kF32 = 1,
  kU8 = 2,
  kI8 = 3,
  kU16 = 4,
  kI16 = 5,
  kI32 = 6,
  kI64 = 7,
  kBool = 9, // one byte per element, 0 or 1
  kF16 = 10,
  kF64 = 11,
  kU32 = 12,
  kU64 = 13,
  kBF16 = 16,
};

/// Bytes per element of `dtype`, 0 when unknown.
inline size_t sizeOf(int dtype) {
  switch (dtype) {
  case kF32:
  case kI32:
  case kU32:
    return 4;
  case kF64:
  case kI64:
  case kU64:
    return 8;
  case kF16:
  case kBF16:
  case kI16:
  case kU16:
    return 2;
  case kU8:
  case kI8:
  case kBool:
    return 1;
  default:
    return 0;
  }
}

/// "f32", "i64", ...; "undefined" for an unknown dtype.
inline const char *nameOf(int dtype) {
  switch (dtype) {
  case kF32:
    return "f32";
  case kU8:
    return "u8";
  case kI8:
    return "i8";
  case kI16:
    return "i16";
  case kU16:
    return "u16";
  case kU32:
    return "u32";
  case kU64:
    return "u64";
  case kI32:
    return "i32";
  case kI64:
    return "i64";
  case kBool:
    return "bool";
  case kF16:
    return "f16";
  case kF64:
    return "f64";
  case kBF16:
    return "bf16";
  default:
    return "undefined";
  }
}

} // namespace loom::dtypes

#endif // LOOM_COMMON_DTYPE_H
