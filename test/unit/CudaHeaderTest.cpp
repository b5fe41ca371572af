//===- CudaHeaderTest.cpp - CudaApi.h against the CUDA headers ------------===//
//
// The runtime declares the few CUDA types and enum values it passes
// (runtime/src/cuda/CudaApi.h) instead of including the toolkit's
// headers. Built where the toolkit's cuda.h and cublasLt.h are found: each
// value is checked against them at compile time, and each symbol of the
// driver table against the name cuda.h maps its function to
// (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime ->
// cuEventElapsedTime_v2 in CUDA 13).
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>
#include <cuda.h>

#include "runtime/src/cuda/CudaApi.h"

#include <gtest/gtest.h>

#include <string>

namespace api = loom::cuda::api;

static_assert(api::kSuccess == CUDA_SUCCESS);
static_assert(api::kErrorNotFound == CUDA_ERROR_NOT_FOUND);
static_assert(api::kAttrComputeCapabilityMajor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(api::kAttrComputeCapabilityMinor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(api::kAttrMaxSharedPerBlockOptin ==
              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
static_assert(api::kFuncAttrMaxDynamicShared ==
              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
static_assert(api::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(api::kEventDefault == CU_EVENT_DEFAULT);
static_assert(api::kCaptureModeRelaxed == CU_STREAM_CAPTURE_MODE_RELAXED);
static_assert(api::kCublasSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(api::kOpN == CUBLAS_OP_N && api::kOpT == CUBLAS_OP_T);
static_assert(api::kComputeF32 == CUBLAS_COMPUTE_32F &&
              api::kComputeF64 == CUBLAS_COMPUTE_64F &&
              api::kComputeF32FastTf32 == CUBLAS_COMPUTE_32F_FAST_TF32);
static_assert(api::kR32F == CUDA_R_32F && api::kR64F == CUDA_R_64F &&
              api::kR16F == CUDA_R_16F && api::kR16BF == CUDA_R_16BF);
static_assert(api::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
              api::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(api::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
              api::kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER);
static_assert(api::kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
              api::kEpilogueRelu == CUBLASLT_EPILOGUE_RELU &&
              api::kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              api::kEpilogueReluBias == CUBLASLT_EPILOGUE_RELU_BIAS &&
              api::kEpilogueGelu == CUBLASLT_EPILOGUE_GELU &&
              api::kEpilogueGeluBias == CUBLASLT_EPILOGUE_GELU_BIAS);
static_assert(api::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
              api::kLayoutBatchStride ==
                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(api::kPrefMaxWorkspace ==
              CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(sizeof(loom::cuda::cublasLtMatmulHeuristicResult_t) ==
              sizeof(::cublasLtMatmulHeuristicResult_t));

#define LOOM_STRING(x) #x
#define LOOM_EXPANDED(x) LOOM_STRING(x)

TEST(CudaHeaderTest, DriverSymbolsAreTheHeadersNames) {
  // cuda.h defines each versioned function's name as a macro: the name
  // expanded is the symbol the driver exports for it.
#define LOOM_CHECK(name, symbol, ret, params)                                  \
  EXPECT_EQ(std::string(LOOM_EXPANDED(name)), #symbol) << #name;
  LOOM_CUDA_DRIVER_SYMBOLS(LOOM_CHECK)
#undef LOOM_CHECK
}
