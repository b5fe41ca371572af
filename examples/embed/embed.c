/* embed.c - run a compiled Loom model from C through the runtime's C API.
 *
 *   loom-example-embed MODEL.loom [DYNAMIC_DIM_SIZE]
 *
 * Prints the model's signature, feeds every input with 0.01 * i (element
 * index i; dynamic dims take DYNAMIC_DIM_SIZE, default 2), runs it twice
 * from two threads at once (a session may be shared) and prints the first
 * values of each output. Only f32 inputs are filled this way. */
#include <loom/runtime.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_TENSORS 64

struct run {
  loom_session *session;
  const loom_tensor *inputs[MAX_TENSORS];
  loom_tensor *outputs[MAX_TENSORS];
  size_t num_inputs, num_outputs;
  loom_status status;
};

static int check(loom_status status, const char *what) {
  if (!status)
    return 0;
  fprintf(stderr, "error: %s: %s\n", what, loom_status_message(status));
  loom_status_free(status);
  return 1;
}

static void print_info(const char *kind, const loom_tensor_info *info) {
  printf("%s '%s': %s[", kind, info->name, loom_dtype_name(info->dtype));
  for (size_t d = 0; d < info->rank; ++d) {
    if (info->dims[d] >= 0)
      printf("%s%lld", d ? ", " : "", (long long)info->dims[d]);
    else
      printf("%s%s", d ? ", " : "",
             info->dim_names[d][0] ? info->dim_names[d] : "?");
  }
  printf("]\n");
}

static void *run_model(void *arg) {
  struct run *r = arg;
  r->status = loom_session_run(r->session, r->inputs, r->num_inputs, r->outputs,
                               r->num_outputs);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.loom [DYNAMIC_DIM_SIZE]\n", argv[0]);
    return 2;
  }
  int64_t dynamic = argc > 2 ? atoll(argv[2]) : 2;
  /* The library loaded may be newer than this program's header (never
   * older: it would lack the symbols). */
  if (loom_runtime_api_version() < LOOM_RUNTIME_API_VERSION) {
    fprintf(stderr, "error: runtime API %u, this program needs %d\n",
            (unsigned)loom_runtime_api_version(), LOOM_RUNTIME_API_VERSION);
    return 1;
  }
  /* Options start from *_initialize, which sets struct_size. */
  loom_instance_options options;
  loom_instance_options_initialize(&options);
  options.device = LOOM_DEVICE_AUTO;
  loom_instance *instance = NULL;
  loom_session *session = NULL;
  if (check(loom_instance_create(&options, &instance), "instance") ||
      check(loom_session_create_from_file(instance, argv[1], &session), "load"))
    return 1;

  struct run runs[2] = {{session}, {session}};
  size_t n_in = loom_session_input_count(session);
  size_t n_out = loom_session_output_count(session);
  if (n_in > MAX_TENSORS || n_out > MAX_TENSORS) {
    fprintf(stderr, "error: more than %d inputs or outputs\n", MAX_TENSORS);
    return 1;
  }
  loom_tensor *inputs[MAX_TENSORS] = {0};
  int rc = 0;
  for (size_t i = 0; i < n_in && !rc; ++i) {
    loom_tensor_info info;
    int64_t shape[16];
    rc = check(loom_session_input_info(session, i, &info), "input info");
    if (rc || info.rank > 16)
      break;
    print_info("input", &info);
    for (size_t d = 0; d < info.rank; ++d)
      shape[d] = info.dims[d] >= 0 ? info.dims[d] : dynamic;
    rc = check(loom_tensor_create(info.dtype, info.rank, shape, &inputs[i]),
               "tensor");
    if (!rc && info.dtype == LOOM_DTYPE_F32) {
      float *data = loom_tensor_data(inputs[i]);
      for (size_t k = 0; k < loom_tensor_element_count(inputs[i]); ++k)
        data[k] = 0.01f * (float)k;
    }
  }
  for (size_t i = 0; i < n_out && !rc; ++i) {
    loom_tensor_info info;
    rc = check(loom_session_output_info(session, i, &info), "output info");
    if (!rc)
      print_info("output", &info);
  }

  /* Two runs of one session from two threads at once. */
  pthread_t threads[2];
  for (int t = 0; t < 2 && !rc; ++t) {
    for (size_t i = 0; i < n_in; ++i)
      runs[t].inputs[i] = inputs[i];
    runs[t].num_inputs = n_in;
    runs[t].num_outputs = n_out;
    pthread_create(&threads[t], NULL, run_model, &runs[t]);
  }
  for (int t = 0; t < 2 && !rc; ++t)
    pthread_join(threads[t], NULL);
  for (int t = 0; t < 2 && !rc; ++t)
    rc = check(runs[t].status, "run");

  for (size_t i = 0; i < n_out && !rc; ++i) {
    loom_tensor *out = runs[0].outputs[i];
    printf("output %zu: %s, %zu elements:", i,
           loom_dtype_name(loom_tensor_dtype(out)),
           loom_tensor_element_count(out));
    if (loom_tensor_dtype(out) == LOOM_DTYPE_F32) {
      const float *a = loom_tensor_data_const(out);
      const float *b = loom_tensor_data_const(runs[1].outputs[i]);
      for (size_t k = 0; k < loom_tensor_element_count(out) && k < 8; ++k)
        printf(" %g", a[k]);
      for (size_t k = 0; k < loom_tensor_element_count(out); ++k)
        if (a[k] != b[k])
          rc = fprintf(stderr, "error: the two runs differ\n") > 0;
    }
    printf("\n");
  }
  for (int t = 0; t < 2; ++t)
    for (size_t i = 0; i < n_out; ++i)
      loom_tensor_release(runs[t].outputs[i]);
  for (size_t i = 0; i < n_in; ++i)
    loom_tensor_release(inputs[i]);
  loom_session_release(session);
  loom_instance_release(instance);
  return rc;
}
