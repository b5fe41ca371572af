/* loom/runtime.h - the Loom runtime's C API.
 *
 * Loads a compiled artifact (.loom) and runs it. No compiler, MLIR or LLVM
 * is linked; the runtime needs the C and C++ standard libraries and
 * protobuf.
 *
 * Errors: every function that can fail returns a loom_status. NULL means
 * success; otherwise the caller owns the status and frees it with
 * loom_status_free. Nothing in the runtime aborts or exits the process on
 * bad input.
 *
 * Ownership: objects returned through `out` parameters are owned by the
 * caller and released with their *_release function. Releasing NULL is a
 * no-op.
 *
 * Threading contract:
 *   - A loom_session is immutable once created. loom_session_run may be
 *     called on the same session from any number of threads at once; each
 *     call uses its own scratch memory.
 *   - A loom_tensor is not synchronized: do not write a tensor in one
 *     thread while another thread reads it or passes it to a run.
 *   - loom_instance and loom_session may be released only when no call on
 *     them (or on sessions created from the instance) is in flight.
 *   - The runtime keeps no global mutable state.
 */
#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_RUNTIME_API_VERSION 1

typedef enum loom_status_code {
  LOOM_OK = 0,
  LOOM_INVALID_ARGUMENT = 1, /* a bad call: null pointer, wrong index */
  LOOM_NOT_FOUND = 2,        /* a file or name that does not exist */
  LOOM_BAD_ARTIFACT = 3,     /* a foreign, stale, truncated or corrupt file */
  LOOM_SHAPE_MISMATCH = 4,   /* an input whose dtype or shape does not fit */
  LOOM_UNAVAILABLE = 5,      /* the target (CPU code, device) cannot run */
  LOOM_INTERNAL = 6,
} loom_status_code;

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum loom_dtype {
  LOOM_DTYPE_UNDEFINED = 0,
  LOOM_DTYPE_F32 = 1,
  LOOM_DTYPE_U8 = 2,
  LOOM_DTYPE_I8 = 3,
  LOOM_DTYPE_I16 = 5,
  LOOM_DTYPE_I32 = 6,
  LOOM_DTYPE_I64 = 7,
  LOOM_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  LOOM_DTYPE_F16 = 10,
  LOOM_DTYPE_F64 = 11,
  LOOM_DTYPE_BF16 = 16,
} loom_dtype;

typedef struct loom_status_s *loom_status;
typedef struct loom_instance_s loom_instance;
typedef struct loom_session_s loom_session;
typedef struct loom_tensor_s loom_tensor;

/* ---- status ---- */
loom_status_code loom_status_get_code(loom_status status);
/* The message, valid until the status is freed; "" for NULL. */
const char *loom_status_message(loom_status status);
void loom_status_free(loom_status status);

/* ---- dtypes ---- */
/* Bytes per element; 0 for an unknown dtype. */
size_t loom_dtype_size(loom_dtype dtype);
/* "f32", "i64", ... ; "undefined" for an unknown dtype. */
const char *loom_dtype_name(loom_dtype dtype);

/* ---- instance ---- */
typedef struct loom_instance_options {
  /* Threads for CPU kernels; 0 = one per core. The generated loops of this
   * instance's runs use at most this many of OpenMP's threads; the GEMM
   * libraries (oneDNN through OpenMP, OpenBLAS) keep one thread count per
   * process: the last instance created with a non-zero num_threads sets it
   * for all. */
  int32_t num_threads;
} loom_instance_options;

/* `options` may be NULL for the defaults. */
loom_status loom_instance_create(const loom_instance_options *options,
                                 loom_instance **out);
void loom_instance_release(loom_instance *instance);

/* ---- session ---- */
loom_status loom_session_create_from_file(loom_instance *instance,
                                          const char *path, loom_session **out);
/* The bytes are copied; the caller may free them after the call. */
loom_status loom_session_create_from_memory(loom_instance *instance,
                                            const void *data, size_t size,
                                            loom_session **out);
void loom_session_release(loom_session *session);

/* The signature of one input or output. Pointers stay valid while the
 * session lives. dims[i] is -1 for a dynamic dim, whose name (possibly "")
 * is dim_names[i]. */
typedef struct loom_tensor_info {
  const char *name;
  loom_dtype dtype;
  size_t rank;
  const int64_t *dims;
  const char *const *dim_names;
} loom_tensor_info;

size_t loom_session_input_count(const loom_session *session);
size_t loom_session_output_count(const loom_session *session);
loom_status loom_session_input_info(const loom_session *session, size_t index,
                                    loom_tensor_info *out);
loom_status loom_session_output_info(const loom_session *session, size_t index,
                                     loom_tensor_info *out);

/* Runs the model. `inputs` holds one tensor per input, in signature order;
 * their dtypes and shapes are checked (dynamic dims may take any size, and
 * dims sharing a name must agree). On success `outputs` receives one new
 * tensor per output, owned by the caller. On failure no output is set.
 * Values the model checks only when it runs (a Reshape shape, Slice
 * bounds or axes passed as inputs) give LOOM_INVALID_ARGUMENT with a
 * message naming the op and its ONNX node. */
loom_status loom_session_run(loom_session *session,
                             const loom_tensor *const *inputs,
                             size_t num_inputs, loom_tensor **outputs,
                             size_t num_outputs);

/* ---- profiling ---- */
/* A profile collects one event per kernel of each profiled run (the name
 * says what the kernel computes, its shape and the model node it came
 * from). A profile may be shared by runs on several threads. */
typedef struct loom_profile_s loom_profile;
loom_status loom_profile_create(loom_profile **out);
void loom_profile_release(loom_profile *profile);
size_t loom_profile_event_count(const loom_profile *profile);
/* Writes the events as a Chrome trace (chrome://tracing, Perfetto): one
 * complete event per kernel, one per run, one row per thread. */
loom_status loom_profile_write_chrome_trace(const loom_profile *profile,
                                            const char *path);
/* loom_session_run, recording into `profile`. */
loom_status loom_session_run_profiled(loom_session *session,
                                      const loom_tensor *const *inputs,
                                      size_t num_inputs, loom_tensor **outputs,
                                      size_t num_outputs,
                                      loom_profile *profile);

/* ---- tensors: dense, row-major ---- */
/* A zero-filled tensor owning its memory (64-byte aligned). */
loom_status loom_tensor_create(loom_dtype dtype, size_t rank,
                               const int64_t *shape, loom_tensor **out);
/* A tensor over caller memory of `size_bytes` bytes, which must hold the
 * whole tensor and outlive it. The runtime never frees it. */
loom_status loom_tensor_wrap(loom_dtype dtype, size_t rank,
                             const int64_t *shape, void *data,
                             size_t size_bytes, loom_tensor **out);
void loom_tensor_release(loom_tensor *tensor);
loom_dtype loom_tensor_dtype(const loom_tensor *tensor);
size_t loom_tensor_rank(const loom_tensor *tensor);
/* `rank` entries, valid while the tensor lives. */
const int64_t *loom_tensor_shape(const loom_tensor *tensor);
size_t loom_tensor_element_count(const loom_tensor *tensor);
size_t loom_tensor_size_bytes(const loom_tensor *tensor);
void *loom_tensor_data(loom_tensor *tensor);
const void *loom_tensor_data_const(const loom_tensor *tensor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_RUNTIME_H */
