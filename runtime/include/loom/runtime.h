/* loom/runtime.h - the Loom runtime's C API.
 *
 * Loads a compiled artifact (.loom) and runs it. No compiler, MLIR or LLVM
 * is linked; the runtime needs the C and C++ standard libraries and
 * protobuf.
 *
 * Errors: every function that can fail returns a loom_status. NULL means
 * success; otherwise the caller owns the status and frees it with
 * loom_status_free. Nothing in the runtime aborts or exits the process on
 * bad input. A failed allocation whose size the data decides (a tensor, a
 * weight, a run's scratch) is LOOM_OUT_OF_MEMORY; when even the status
 * cannot be allocated, the status is a preallocated LOOM_OUT_OF_MEMORY one
 * (loom_status_free ignores it: free every status all the same).
 *
 * Ownership: objects returned through `out` parameters are owned by the
 * caller and released with their *_release function. Releasing NULL is a
 * no-op.
 *
 * Threading contract:
 *   - A loom_session is immutable once created. loom_session_run may be
 *     called on the same session from any number of threads at once; each
 *     call uses its own scratch memory (a run context: the slots of the
 *     compiler's memory plan), taken from the session's pool and given
 *     back when the run returns. A session's memory is its weights plus
 *     one context per run in flight, each holding the plan's bytes for the
 *     largest shapes run so far: it does not grow over time, only with
 *     new peaks of concurrency or of dynamic dims. A run's results do not
 *     depend on the other runs in flight (they share only the immutable
 *     session).
 *     loom_session_set_max_concurrent_runs caps the contexts (runs past
 *     the cap wait for one to be free); loom_session_memory_stats reports
 *     them. Both may be called at any time, from any thread.
 *     On a CUDA device a run's scratch is its own stream, arena and
 *     staging buffers, made when no cached set is free.
 *   - A loom_tensor is not synchronized: do not write a tensor in one
 *     thread while another thread reads it or passes it to a run.
 *   - loom_instance and loom_session may be released only when no call on
 *     them (or on sessions created from the instance) is in flight.
 *   - A loom_trainer is not thread-safe: calls on one trainer must not
 *     overlap (it owns mutable state). Several trainers of one session may
 *     step on different threads at once, since they share only the
 *     immutable session.
 *   - A loom_communicator runs one step at a time: runs of sessions that
 *     share a communicator are serialized (a run holds it from start to
 *     end), since every rank must issue the same collectives in the same
 *     order. Attach it before the session's first run, never while a run
 *     is in flight; release it after the sessions it is attached to.
 *   - The runtime keeps no global mutable state (a communicator's worker
 *     thread and rank 0's rendezvous thread belong to the communicator).
 */
#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

/* Marks the library's public functions: libloom_runtime.so is built with
 * -fvisibility=hidden and exports these (and the generated code's ABI,
 * loom/common/CodegenAbi.h) only. */
#if defined(_WIN32)
#define LOOM_API
#else
#define LOOM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header's API. Version 4 added loom_runtime_api_
 * version, LOOM_OUT_OF_MEMORY and the struct_size field that opens every
 * options struct; version 5 loom_trainer_memory_stats; version 6
 * loom_trainer_set_state; version 7 loom_trainer_updates_state_in_place. */
#define LOOM_RUNTIME_API_VERSION 7

typedef enum loom_status_code {
  LOOM_OK = 0,
  LOOM_INVALID_ARGUMENT = 1, /* a bad call: null pointer, wrong index */
  LOOM_NOT_FOUND = 2,        /* a file or name that does not exist */
  LOOM_BAD_ARTIFACT = 3,     /* a foreign, stale, truncated or corrupt file */
  LOOM_SHAPE_MISMATCH = 4,   /* an input whose dtype or shape does not fit */
  LOOM_UNAVAILABLE = 5,      /* the target (CPU code, device) cannot run */
  LOOM_INTERNAL = 6,
  LOOM_OUT_OF_MEMORY = 7, /* an allocation failed; the session stays usable */
} loom_status_code;

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum loom_dtype {
  LOOM_DTYPE_UNDEFINED = 0,
  LOOM_DTYPE_F32 = 1,
  LOOM_DTYPE_U8 = 2,
  LOOM_DTYPE_I8 = 3,
  LOOM_DTYPE_U16 = 4,
  LOOM_DTYPE_I16 = 5,
  LOOM_DTYPE_I32 = 6,
  LOOM_DTYPE_I64 = 7,
  LOOM_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  LOOM_DTYPE_F16 = 10,
  LOOM_DTYPE_F64 = 11,
  LOOM_DTYPE_U32 = 12,
  LOOM_DTYPE_U64 = 13,
  LOOM_DTYPE_BF16 = 16,
} loom_dtype;

typedef struct loom_status_s *loom_status;
typedef struct loom_instance_s loom_instance;
typedef struct loom_session_s loom_session;
typedef struct loom_tensor_s loom_tensor;

/* ---- version ---- */
/* The API version of the library loaded at run time (LOOM_RUNTIME_API_
 * VERSION of the header it was built with), to compare with the header a
 * program was compiled against.
 *
 * Options structs grow: each starts with `size_t struct_size`, which its
 * *_options_initialize sets to the sizeof the caller compiled against
 * (they are inline in this header for that reason: the library's own
 * sizeof may be larger than the caller's struct). The
 * library reads only the fields within struct_size (a newer library takes
 * the defaults for fields an older caller does not know) and refuses a
 * struct_size of 0 or below the first versioned layout with
 * LOOM_INVALID_ARGUMENT naming the struct: call *_options_initialize
 * before setting fields. */
LOOM_API uint32_t loom_runtime_api_version(void);

/* ---- status ---- */
LOOM_API loom_status_code loom_status_get_code(loom_status status);
/* The message, valid until the status is freed; "" for NULL. */
LOOM_API const char *loom_status_message(loom_status status);
LOOM_API void loom_status_free(loom_status status);

/* ---- dtypes ---- */
/* Bytes per element; 0 for an unknown dtype. */
LOOM_API size_t loom_dtype_size(loom_dtype dtype);
/* "f32", "i64", ... ; "undefined" for an unknown dtype. */
LOOM_API const char *loom_dtype_name(loom_dtype dtype);

/* ---- instance ---- */
/* Where a session runs its artifact's code (docs/cuda.md). */
typedef enum loom_device {
  /* The artifact's CUDA code (loomc --target cuda) when it has some and a
   * CUDA device answers, else its CPU code. */
  LOOM_DEVICE_AUTO = 0,
  /* The artifact's CPU code; LOOM_UNAVAILABLE when it has none. */
  LOOM_DEVICE_CPU = 1,
  /* The artifact's CUDA code on GPU `device_ordinal`; LOOM_UNAVAILABLE
   * when the artifact has none ("compile with loomc --target cuda") or
   * no GPU answers ("no CUDA driver (dlopen libcuda.so.1: ...)", "cuInit
   * failed: CUDA_ERROR_NO_DEVICE (100)"). The CUDA libraries are opened
   * with dlopen: the runtime has no link-time CUDA dependency. */
  LOOM_DEVICE_CUDA = 2,
  /* The artifact's CUDA program executed on the host by the CUDA
   * simulator: the runtime's CUDA executor through host implementations
   * of the driver and cuBLASLt, the CUDA source compiled as host C++ (a
   * C++ compiler must be on PATH, or named by LOOM_SIM_CXX). A check of
   * the generated code on machines without a GPU (docs/cuda.md), orders
   * of magnitude slower than a GPU: not a way to run models. Never chosen
   * by LOOM_DEVICE_AUTO. */
  LOOM_DEVICE_CUDA_SIM = 3,
} loom_device;

typedef struct loom_instance_options {
  /* sizeof(loom_instance_options), set by loom_instance_options_initialize
   * (see loom_runtime_api_version). */
  size_t struct_size;
  /* Threads for CPU kernels; 0 = one per core. The generated loops of this
   * instance's runs use at most this many of OpenMP's threads; the GEMM
   * libraries (oneDNN through OpenMP, OpenBLAS) keep one thread count per
   * process: the last instance created with a non-zero num_threads sets it
   * for all. */
  int32_t num_threads;
  /* Limits on what a file the runtime loads (an artifact, a checkpoint) may
   * make it read or allocate, checked before anything in the file is
   * trusted; 0 = the default. A file over a limit is refused with
   * LOOM_BAD_ARTIFACT and a message naming the limit.
   * max_file_bytes: one whole file (default: no limit; the message in it
   * is at most 2 GiB - 1, protobuf's limit, the tensor data after it has
   * none).
   * max_tensor_bytes: one tensor a file holds or has the runtime allocate:
   * a weight, a training state (zero-filled ones too), a checkpoint tensor,
   * a sharded one merged (default 8 GiB). docs/hardening.md. */
  uint64_t max_file_bytes;
  uint64_t max_tensor_bytes;
  /* The device of this instance's sessions (LOOM_DEVICE_AUTO when 0). */
  loom_device device;
  /* The CUDA device's ordinal (0: the first GPU). */
  int32_t device_ordinal;
} loom_instance_options;

/* The defaults: struct_size set, every other field 0 (one thread per
 * core, LOOM_DEVICE_AUTO, GPU 0). */
static inline void
loom_instance_options_initialize(loom_instance_options *options) {
  if (options) {
    loom_instance_options defaults = {sizeof(loom_instance_options)};
    *options = defaults;
  }
}

/* `options` may be NULL for the defaults. LOOM_INVALID_ARGUMENT when its
 * struct_size is 0 or too small (not initialized). */
LOOM_API loom_status loom_instance_create(const loom_instance_options *options,
                                          loom_instance **out);
LOOM_API void loom_instance_release(loom_instance *instance);

/* ---- session ---- */
LOOM_API loom_status loom_session_create_from_file(loom_instance *instance,
                                                   const char *path,
                                                   loom_session **out);
/* The bytes are copied; the caller may free them after the call. */
LOOM_API loom_status loom_session_create_from_memory(loom_instance *instance,
                                                     const void *data,
                                                     size_t size,
                                                     loom_session **out);
LOOM_API void loom_session_release(loom_session *session);

/* The device the session runs on: LOOM_DEVICE_CPU, LOOM_DEVICE_CUDA or
 * LOOM_DEVICE_CUDA_SIM (never AUTO: the choice is made when the session is
 * created). */
LOOM_API loom_device loom_session_device(const loom_session *session);
/* A line for people and logs, valid while the session lives: "cpu", or
 * the GPU, its arch, where the code came from (the artifact's cubin, or
 * NVRTC with the number of programs taken from the cache), the load time. */
LOOM_API const char *
loom_session_device_description(const loom_session *session);

/* 1 when the session's artifact is a training artifact (loomc train): its
 * entry is a training step that loom_trainer_* drives; 0 otherwise. */
LOOM_API int32_t loom_session_is_training(const loom_session *session);

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

LOOM_API size_t loom_session_input_count(const loom_session *session);
LOOM_API size_t loom_session_output_count(const loom_session *session);
LOOM_API loom_status loom_session_input_info(const loom_session *session,
                                             size_t index,
                                             loom_tensor_info *out);
LOOM_API loom_status loom_session_output_info(const loom_session *session,
                                              size_t index,
                                              loom_tensor_info *out);

/* Runs the model. `inputs` holds one tensor per input, in signature order;
 * their dtypes and shapes are checked (dynamic dims may take any size, and
 * dims sharing a name must agree). On success `outputs` receives one new
 * tensor per output, owned by the caller. On failure no output is set.
 * Values the model checks only when it runs (a Reshape shape, Slice
 * bounds or axes passed as inputs) give LOOM_INVALID_ARGUMENT with a
 * message naming the op and its ONNX node. */
LOOM_API loom_status loom_session_run(loom_session *session,
                                      const loom_tensor *const *inputs,
                                      size_t num_inputs, loom_tensor **outputs,
                                      size_t num_outputs);

/* At most `max_runs` runs of this session use scratch memory at once: a
 * further loom_session_run waits until one returns. 0 (the default) sets
 * no cap beyond the callers' threads. A cap below the runs in flight takes
 * effect as they return (their contexts are freed, not kept). */
LOOM_API loom_status loom_session_set_max_concurrent_runs(loom_session *session,
                                                          size_t max_runs);

/* What a session holds. */
typedef struct loom_session_memory {
  size_t weight_bytes;  /* the weights: read in place from the mapped
                           artifact file (pages shared by every process
                           mapping it), or copied from memory */
  size_t scratch_bytes; /* the run contexts' slots, in use or free */
  size_t run_contexts;  /* contexts that exist: the peak runs in flight,
                           at most the cap when one is set */
  size_t runs_in_flight;
  size_t max_concurrent_runs; /* the cap; 0 when none */
} loom_session_memory;

LOOM_API loom_status loom_session_memory_stats(const loom_session *session,
                                               loom_session_memory *out);

/* ---- profiling ---- */
/* A profile collects one event per kernel of each profiled run (the name
 * says what the kernel computes, its shape and the model node it came
 * from). A profile may be shared by runs on several threads. */
typedef struct loom_profile_s loom_profile;
LOOM_API loom_status loom_profile_create(loom_profile **out);
LOOM_API void loom_profile_release(loom_profile *profile);
LOOM_API size_t loom_profile_event_count(const loom_profile *profile);
/* Writes the events as a Chrome trace (chrome://tracing, Perfetto): one
 * complete event per kernel, one per run, one row per thread. */
LOOM_API loom_status
loom_profile_write_chrome_trace(const loom_profile *profile, const char *path);
/* loom_session_run, recording into `profile`. */
LOOM_API loom_status loom_session_run_profiled(
    loom_session *session, const loom_tensor *const *inputs, size_t num_inputs,
    loom_tensor **outputs, size_t num_outputs, loom_profile *profile);

/* ---- training ---- */
/* A trainer runs a training artifact's step function again and again. The
 * step's entry takes the batch inputs (the model's inputs and the labels),
 * the micro-step counter, the schedule horizon and the trained state
 * (parameters, optimizer slots), and returns the loss, the gradient norm,
 * the learning rate and the next value of every state tensor. The trainer
 * owns the state between steps: it passes the counter and the horizon
 * itself, and adopts each step's state outputs without copying them.
 *
 * A trainer refers to its session, which must outlive it. It is not
 * thread-safe (see the threading contract above). */
typedef struct loom_trainer_s loom_trainer;

/* What one loom_trainer_step did. */
typedef struct loom_train_stats {
  double loss;            /* this micro-batch's loss */
  double grad_norm;       /* the global gradient norm (before clipping) */
  double lr;              /* the learning rate of this step */
  int64_t micro_step;     /* the counter this micro-batch ran with (0-based) */
  int64_t optimizer_step; /* micro_step / accumulate: the optimizer step
                             this micro-batch belongs to (0-based) */
  int32_t applied;   /* 1 when this micro-batch completes an optimizer step:
                        (micro_step + 1) % accumulate == 0 */
  int32_t nonfinite; /* 1 when the loss or the gradient norm is NaN or
                        infinite: the update was skipped */
  double loss_scale; /* the loss scale this step ran with (f16 dynamic loss
                        scaling), 0 when the step does not scale its loss */
} loom_train_stats;

/* A trainer over a training session: the state tensors hold their initial
 * values (zeros where the artifact has none), the micro-step counter is 0
 * and the horizon is the artifact's (0 when it has none: set it with
 * loom_trainer_set_total_steps). LOOM_INVALID_ARGUMENT when the session's
 * artifact is not a training artifact. */
LOOM_API loom_status loom_trainer_create(loom_session *session,
                                         loom_trainer **out);
LOOM_API void loom_trainer_release(loom_trainer *trainer);

/* The batch inputs: the entry's inputs that are neither the step counter,
 * the horizon nor state, in entry order (the labels among them). Their
 * infos stay valid while the session lives. */
LOOM_API size_t loom_trainer_batch_input_count(const loom_trainer *trainer);
LOOM_API loom_status loom_trainer_batch_input_info(const loom_trainer *trainer,
                                                   size_t index,
                                                   loom_tensor_info *out);
/* The labels input's name ("" when the artifact names none), and the
 * artifact's description of the loss, optimizer and schedule. Valid while
 * the session lives. */
LOOM_API const char *loom_trainer_labels(const loom_trainer *trainer);
LOOM_API const char *loom_trainer_description(const loom_trainer *trainer);
/* Micro-batches per optimizer step (>= 1). */
LOOM_API int32_t loom_trainer_accumulate(const loom_trainer *trainer);

/* Runs one micro-batch: `batch` holds one tensor per batch input, in
 * batch-input order, checked as loom_session_run checks inputs. `stats`
 * may be NULL. On success the counter advances by one, and the state
 * becomes the step's outputs unless the loss or the gradient norm is not
 * finite: then stats->nonfinite is 1, the state is left as it was (the
 * update is skipped) and the status is still OK; the caller decides to
 * stop or go on. A step with dynamic loss scaling (stats->loss_scale > 0)
 * skips its own update on non-finite gradients and lowers its scale: its
 * state is adopted, stats->nonfinite is 1, and such steps are expected
 * now and then. On failure (a bad batch, a value the model rejects)
 * nothing changes. LOOM_INVALID_ARGUMENT when the artifact has a schedule
 * horizon input and the horizon is 0 (unset). */
LOOM_API loom_status loom_trainer_step(loom_trainer *trainer,
                                       const loom_tensor *const *batch,
                                       size_t num_batch,
                                       loom_train_stats *stats);
/* loom_trainer_step, recording the step's run and its kernels into
 * `profile` (see loom_session_run_profiled). */
LOOM_API loom_status loom_trainer_step_profiled(loom_trainer *trainer,
                                                const loom_tensor *const *batch,
                                                size_t num_batch,
                                                loom_train_stats *stats,
                                                loom_profile *profile);

/* The micro-step counter: micro-batches run so far (restored by load). */
LOOM_API int64_t loom_trainer_micro_step(const loom_trainer *trainer);
/* The schedule horizon in optimizer steps, passed to every step; 0 while
 * unset. `total_steps` must be at least 1. */
LOOM_API loom_status loom_trainer_set_total_steps(loom_trainer *trainer,
                                                  int64_t total_steps);
LOOM_API int64_t loom_trainer_total_steps(const loom_trainer *trainer);

/* The state tensors (parameters first, then optimizer slots, as the
 * artifact lists them). A tensor returned here is owned by the trainer,
 * read-only, and valid until the next loom_trainer_step, loom_trainer_load
 * or loom_trainer_release. `out_name` and `out_kind` ("param", "exp_avg",
 * "momentum", ...) may be NULL; their strings live as long as the session.
 * loom_trainer_find_state: LOOM_NOT_FOUND for an unknown name. */
LOOM_API size_t loom_trainer_state_count(const loom_trainer *trainer);
LOOM_API loom_status loom_trainer_state(const loom_trainer *trainer,
                                        size_t index, const char **out_name,
                                        const char **out_kind,
                                        const loom_tensor **out);
LOOM_API loom_status loom_trainer_find_state(const loom_trainer *trainer,
                                             const char *name,
                                             const loom_tensor **out);
/* Sets state tensor `name` to a copy of `value`, of the state's dtype and
 * shape (this rank's piece, for sharded state): training starts from
 * given weights (loom-run --init), without recompiling the artifact.
 * LOOM_NOT_FOUND for an unknown name; LOOM_SHAPE_MISMATCH naming the
 * tensor when the value does not fit. The next step uses it (on a GPU,
 * it is uploaded with that step). */
LOOM_API loom_status loom_trainer_set_state(loom_trainer *trainer,
                                            const char *name,
                                            const loom_tensor *value);

/* What a trainer holds, by role (loom-run --print-memory). The step's code
 * returns the next value of every state tensor as a new tensor, so while a
 * step runs the state is held twice (the sum of the three once more). The
 * planned activations and gradients are the session's scratch
 * (loom_session_memory.scratch_bytes); the weights that are not trained,
 * its weight_bytes. */
typedef struct loom_trainer_memory {
  size_t parameter_bytes;       /* kind "param" */
  size_t optimizer_state_bytes; /* the optimizer's slots: moments, momentum */
  size_t accumulator_bytes;     /* gradient accumulators ("grad_accum") */
} loom_trainer_memory;

LOOM_API loom_status loom_trainer_memory_stats(const loom_trainer *trainer,
                                               loom_trainer_memory *out);

/* 1 when the training step writes the next values of the state into the
 * trainer's own tensors (a CPU artifact of loomc train: Training.
 * state_in_place), so that a step holds the state once; 0 when it returns
 * new tensors that the trainer adopts (CUDA, pipeline stages, older
 * artifacts) or `trainer` is null. */
LOOM_API int loom_trainer_updates_state_in_place(const loom_trainer *trainer);

/* Checkpoints (.loomckpt): the state tensors, the micro-step counter, the
 * horizon and the accumulation count, with a header (magic LOOMCKPT,
 * version, length, checksum).
 * loom_trainer_save writes atomically: a temporary file in the same
 * directory, written, fsynced, renamed over `path`, the directory fsynced;
 * a crash leaves the old file or the new one, never a part.
 * loom_trainer_load checks the file (LOOM_BAD_ARTIFACT for a foreign,
 * stale, truncated or corrupt one; LOOM_NOT_FOUND when it cannot be
 * read), that it belongs to this model: the same accumulation and the same
 * state names (LOOM_INVALID_ARGUMENT naming the tensor otherwise), each of
 * the same dtype and shape (LOOM_SHAPE_MISMATCH naming the tensor); then
 * restores the state, the counter and the horizon. On failure the trainer
 * is unchanged. */
LOOM_API loom_status loom_trainer_save(const loom_trainer *trainer,
                                       const char *path);
LOOM_API loom_status loom_trainer_load(loom_trainer *trainer, const char *path);

/* ---- distributed: communicators ---- */
/* A communicator joins the processes (ranks) of one job: the collectives of
 * an artifact compiled for a mesh (loomc train --data-parallel N) run over
 * it, between CPU processes over Gloo (TCP). Rank 0 serves the rendezvous
 * on MASTER_PORT; every rank meets it at MASTER_ADDR:MASTER_PORT. See
 * docs/distributed.md.
 *
 * Failures: a rank that never arrives, dies or hangs makes the others fail
 * within the timeout with a status naming the rank (LOOM_UNAVAILABLE);
 * nothing hangs, aborts or exits. After a failure the communicator is
 * broken: every later run fails at once. */
typedef struct loom_communicator_s loom_communicator;

typedef struct loom_communicator_options {
  /* sizeof(loom_communicator_options), set by
   * loom_communicator_options_initialize (see loom_runtime_api_version). */
  size_t struct_size;
  /* How long the rendezvous and each collective may wait for the other
   * ranks, in seconds; 0: $LOOM_COLLECTIVE_TIMEOUT, else 300. */
  double timeout_seconds;
  /* The collective engine: "gloo" (CPU processes over TCP) or "nccl" (GPUs;
   * each rank takes the GPU of its local rank; host buffers are staged
   * through device memory). NULL or "": $LOOM_COLLECTIVES, else "gloo". A
   * job of one rank copies instead of communicating, unless "nccl" is
   * named. LOOM_UNAVAILABLE when NCCL, the CUDA driver or a GPU is
   * missing. */
  const char *backend;
} loom_communicator_options;

/* The defaults: struct_size set, every other field 0 or NULL. */
static inline void
loom_communicator_options_initialize(loom_communicator_options *options) {
  if (options) {
    loom_communicator_options defaults = {sizeof(loom_communicator_options)};
    *options = defaults;
  }
}

/* Joins the job the environment describes, as launchers set it:
 * RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (loom-launch,
 * torchrun), OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK (mpirun) or
 * SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun), the last two with
 * MASTER_ADDR and MASTER_PORT. Without any of them: a communicator of one
 * rank. Returns when every rank has arrived. LOOM_INVALID_ARGUMENT when the
 * variables are missing or inconsistent; LOOM_UNAVAILABLE when the
 * rendezvous fails (the message names the ranks that did not arrive).
 * `options` may be NULL; LOOM_INVALID_ARGUMENT when its struct_size is 0
 * or too small (not initialized). */
LOOM_API loom_status LOOM_API loom_communicator_create_from_env(
    const loom_communicator_options *options, loom_communicator **out);
/* The same with explicit values. */
LOOM_API loom_status loom_communicator_create(
    int32_t rank, int32_t size, const char *master_addr, int32_t master_port,
    const loom_communicator_options *options, loom_communicator **out);
LOOM_API int32_t loom_communicator_rank(const loom_communicator *comm);
LOOM_API int32_t loom_communicator_size(const loom_communicator *comm);
/* The rank among the ranks of this node; -1 when the launcher did not say. */
LOOM_API int32_t loom_communicator_local_rank(const loom_communicator *comm);
/* Blocks until every rank has called it (or fails like a collective). */
LOOM_API loom_status loom_communicator_barrier(loom_communicator *comm);
/* This rank gives up (it is about to exit with an error): the communicator
 * is broken, and the other ranks' collectives that wait on this rank fail
 * with `reason` once it is released (at once, instead of a short wait for
 * the others to release theirs). */
LOOM_API void loom_communicator_abort(loom_communicator *comm,
                                      const char *reason);
/* Rank 0 waits here for the other ranks to release theirs (at most the
 * timeout): it serves their rendezvous. A communicator that is not broken
 * first waits up to 5 s for every rank to release its own, so that no rank
 * closes its connections while another still reads from them. */
LOOM_API void loom_communicator_release(loom_communicator *comm);

/* The session's runs use `comm` for their collectives. Before the first
 * run, not concurrently with runs; `comm` must outlive the session's runs.
 * LOOM_INVALID_ARGUMENT when the artifact's mesh has another number of
 * ranks than the communicator. A session whose artifact has a mesh of more
 * than one rank fails its runs (LOOM_UNAVAILABLE) until one is attached.
 * NULL detaches. */
LOOM_API loom_status loom_session_attach_communicator(loom_session *session,
                                                      loom_communicator *comm);
/* The artifact's mesh: its rank count (1 without a mesh), and its axes
 * and ZeRO stage. `shape`, `axes` may be NULL; otherwise they receive up
 * to `capacity` entries (strings live as long as the session). Returns the
 * number of axes (0 without a mesh). */
LOOM_API size_t loom_session_mesh(const loom_session *session, size_t capacity,
                                  int64_t *shape, const char **axes,
                                  int32_t *zero_stage);

/* ---- tensors: dense, row-major ---- */
/* A zero-filled tensor owning its memory (64-byte aligned). */
LOOM_API loom_status loom_tensor_create(loom_dtype dtype, size_t rank,
                                        const int64_t *shape,
                                        loom_tensor **out);
/* A tensor over caller memory of `size_bytes` bytes, which must hold the
 * whole tensor and outlive it. The runtime never frees it. */
LOOM_API loom_status loom_tensor_wrap(loom_dtype dtype, size_t rank,
                                      const int64_t *shape, void *data,
                                      size_t size_bytes, loom_tensor **out);
LOOM_API void loom_tensor_release(loom_tensor *tensor);
LOOM_API loom_dtype loom_tensor_dtype(const loom_tensor *tensor);
LOOM_API size_t loom_tensor_rank(const loom_tensor *tensor);
/* `rank` entries, valid while the tensor lives. */
LOOM_API const int64_t *loom_tensor_shape(const loom_tensor *tensor);
LOOM_API size_t loom_tensor_element_count(const loom_tensor *tensor);
LOOM_API size_t loom_tensor_size_bytes(const loom_tensor *tensor);
LOOM_API void *loom_tensor_data(loom_tensor *tensor);
LOOM_API const void *loom_tensor_data_const(const loom_tensor *tensor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_RUNTIME_H */
