//===- loom-serve.cpp - an HTTP inference server over the runtime ---------===//
//
//   loom-serve --model NAME=PATH.loom [--model ...] --port P [--host H]
//              [--threads N] [--intra-op-threads K] [--max-concurrent-runs R]
//              [--max-batch B] [--max-wait-ms W] [--max-body-bytes N]
//
// Speaks the Open Inference Protocol v2 (KServe, Triton) over HTTP/1.1 and
// JSON (docs/serving.md): health, server and model metadata, inference;
// /health and /metrics (Prometheus) beside it. Links the runtime's C API
// only: no compiler, MLIR or LLVM. --port 0 takes a free port, printed in
// the "listening on HOST:PORT" line. Requests are served by N threads; each
// model's session runs at most R of them at once (its scratch memory is R
// run contexts); requests for a model whose inputs and outputs share a
// dynamic dim 0 are batched (Model.h). SIGTERM or SIGINT: stop accepting,
// finish the requests in flight, exit 0.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"
#include "tools/loom-serve/Metrics.h"
#include "tools/loom-serve/Model.h"
#include "tools/loom-serve/Protocol.h"

#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace loom::serve;

struct Options {
  std::vector<std::pair<std::string, std::string>> models;
  std::string host = "127.0.0.1";
  int port = -1;
  int threads = 32;
  int intraOpThreads = 1;
  int maxConcurrentRuns = 0; // 0: one per core
  int64_t maxBatch = 8;
  double maxWaitMs = 2;
  size_t maxBodyBytes = 16u << 20;
};

void usage() {
  std::fprintf(
      stderr,
      "usage: loom-serve --model NAME=PATH.loom [--model ...] --port P\n"
      "                  [--host H] [--threads N] [--intra-op-threads K]\n"
      "                  [--max-concurrent-runs R] [--max-batch B]\n"
      "                  [--max-wait-ms W] [--max-body-bytes N]\n");
}

/// A whole decimal number in [lo, hi].
bool parseInt(const char *text, int64_t lo, int64_t hi, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

bool parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *&out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "loom-serve: %s needs a value\n", a.c_str());
        return false;
      }
      out = argv[++i];
      return true;
    };
    auto integer = [&](int64_t lo, int64_t hi, int64_t &out) {
      const char *v;
      if (!value(v))
        return false;
      if (!parseInt(v, lo, hi, out)) {
        std::fprintf(stderr,
                     "loom-serve: %s takes a whole number in [%lld, "
                     "%lld], not '%s'\n",
                     a.c_str(), static_cast<long long>(lo),
                     static_cast<long long>(hi), v);
        return false;
      }
      return true;
    };
    int64_t n = 0;
    const char *v = nullptr;
    if (a == "--model") {
      if (!value(v))
        return false;
      std::string spec = v;
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size() ||
          spec.find('/') < eq) {
        std::fprintf(stderr,
                     "loom-serve: --model takes NAME=PATH.loom, not '%s'\n", v);
        return false;
      }
      o.models.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (a == "--host") {
      if (!value(v))
        return false;
      o.host = v;
    } else if (a == "--port") {
      if (!integer(0, 65535, n))
        return false;
      o.port = static_cast<int>(n);
    } else if (a == "--threads") {
      if (!integer(1, 1024, n))
        return false;
      o.threads = static_cast<int>(n);
    } else if (a == "--intra-op-threads") {
      if (!integer(0, 1024, n))
        return false;
      o.intraOpThreads = static_cast<int>(n);
    } else if (a == "--max-concurrent-runs") {
      if (!integer(0, 1024, n))
        return false;
      o.maxConcurrentRuns = static_cast<int>(n);
    } else if (a == "--max-batch") {
      if (!integer(1, 1 << 20, n))
        return false;
      o.maxBatch = n;
    } else if (a == "--max-wait-ms") {
      if (!integer(0, 60000, n))
        return false;
      o.maxWaitMs = static_cast<double>(n);
    } else if (a == "--max-body-bytes") {
      if (!integer(1, int64_t(1) << 40, n))
        return false;
      o.maxBodyBytes = static_cast<size_t>(n);
    } else if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else {
      std::fprintf(stderr, "loom-serve: unknown argument '%s'\n", a.c_str());
      return false;
    }
  }
  if (o.models.empty() || o.port < 0) {
    std::fprintf(stderr, "loom-serve: --model and --port are required\n");
    return false;
  }
  return true;
}

/// SIGINT and SIGTERM go here (see main).
int stopPipe[2] = {-1, -1};
extern "C" void onStopSignal(int sig) {
  unsigned char byte = static_cast<unsigned char>(sig);
  int saved = errno;
  if (write(stopPipe[1], &byte, 1) < 0) {
    // Nothing to do in a signal handler.
  }
  errno = saved;
}

/// The process's resident set in bytes (0 when /proc cannot tell).
size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident))
    return 0;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

/// Debian's cpp-httplib is a compiled library that listens with a backlog
/// of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when it was built): more clients
/// connecting at once than that are refused or reset. Listening again on
/// the same socket raises the backlog; the socket is found among the
/// process's descriptors as the one listening on `port`.
void widenBacklog(int port) {
  for (int fd = 0; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        !listening)
      continue;
    sockaddr_storage addr = {};
    socklen_t addrLen = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &addrLen) != 0)
      continue;
    int bound = addr.ss_family == AF_INET
                    ? ntohs(reinterpret_cast<sockaddr_in &>(addr).sin_port)
                : addr.ss_family == AF_INET6
                    ? ntohs(reinterpret_cast<sockaddr_in6 &>(addr).sin6_port)
                    : -1;
    if (bound == port)
      ::listen(fd, SOMAXCONN);
  }
}

class Server {
public:
  Server(const Options &options,
         std::map<std::string, std::unique_ptr<Model>> models)
      : options_(options), models_(std::move(models)) {}

  /// Serves until stop(); false when the port cannot be bound.
  bool run();
  void stop() {
    stopping_ = true;
    http_.stop();
  }

private:
  void routes();
  void infer(const httplib::Request &req, httplib::Response &res);
  std::string metricsText() const;
  Model *find(const std::string &name) const {
    auto it = models_.find(name);
    return it == models_.end() ? nullptr : it->second.get();
  }

  const Options &options_;
  std::map<std::string, std::unique_ptr<Model>> models_;
  httplib::Server http_;
  Metrics metrics_;
  std::atomic<bool> stopping_{false};
};

void json(httplib::Response &res, int status, const std::string &body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void Server::infer(const httplib::Request &req, httplib::Response &res) {
  auto start = std::chrono::steady_clock::now();
  ++metrics_.inFlight;
  std::string name = req.matches[1];
  Model *model = find(name);
  auto finish = [&](int status, const std::string &body) {
    json(res, status, body);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    metrics_.request(model ? name : "", status, seconds);
    --metrics_.inFlight;
  };
  if (!model)
    return finish(404, errorBody("unknown model " + jsonString(name)));
  if (req.has_header("Inference-Header-Content-Length"))
    return finish(400, errorBody("binary tensor data is not supported; "
                                 "send the request as JSON"));
  InferRequest request;
  HttpError error;
  ParseLimits limits;
  if (!parseInferRequest(req.body, model->spec(), limits, request, error))
    return finish(error.status, errorBody(error.message));
  std::vector<TensorPtr> outputs;
  if (!model->infer(request, outputs, error,
                    [&](size_t n) { metrics_.batch(name, n); }))
    return finish(error.status, errorBody(error.message));
  finish(200, inferResponse(model->spec(), request, outputs));
}

std::string Server::metricsText() const {
  std::string out = metrics_.render();
  out += "# HELP loom_serve_arena_bytes Scratch memory of the model's run "
         "contexts (the memory plan's slots).\n"
         "# TYPE loom_serve_arena_bytes gauge\n";
  std::string contexts =
      "# HELP loom_serve_run_contexts Run contexts of the model's session "
      "(the peak runs in flight, at most --max-concurrent-runs).\n"
      "# TYPE loom_serve_run_contexts gauge\n";
  std::string weights = "# HELP loom_serve_weight_bytes The model's "
                        "weights.\n# TYPE loom_serve_weight_bytes gauge\n";
  for (const auto &[name, model] : models_) {
    loom_session_memory m = model->memory();
    std::string label = "{model=\"" + labelValue(name) + "\"} ";
    out += "loom_serve_arena_bytes" + label + std::to_string(m.scratch_bytes) +
           "\n";
    contexts += "loom_serve_run_contexts" + label +
                std::to_string(m.run_contexts) + "\n";
    weights += "loom_serve_weight_bytes" + label +
               std::to_string(m.weight_bytes) + "\n";
  }
  out += contexts + weights;
  out += "# HELP process_resident_memory_bytes Resident memory size in "
         "bytes.\n# TYPE process_resident_memory_bytes gauge\n"
         "process_resident_memory_bytes " +
         std::to_string(residentBytes()) + "\n";
  return out;
}

void Server::routes() {
  http_.Get("/v2/health/live",
            [](const httplib::Request &, httplib::Response &res) {
              json(res, 200, "{\"live\":true}");
            });
  http_.Get("/v2/health/ready",
            [this](const httplib::Request &, httplib::Response &res) {
              bool ready = !stopping_;
              json(res, ready ? 200 : 503,
                   ready ? "{\"ready\":true}" : "{\"ready\":false}");
            });
  http_.Get(
      "/health", [this](const httplib::Request &, httplib::Response &res) {
        json(res, stopping_ ? 503 : 200,
             std::string("{\"status\":\"") + (stopping_ ? "stopping" : "ok") +
                 "\",\"models\":" + std::to_string(models_.size()) + "}");
      });
  http_.Get("/v2", [](const httplib::Request &, httplib::Response &res) {
    json(res, 200,
         "{\"name\":\"loom-serve\",\"version\":\"" +
             std::to_string(LOOM_RUNTIME_API_VERSION) +
             "\",\"extensions\":[]}");
  });
  http_.Get("/metrics",
            [this](const httplib::Request &, httplib::Response &res) {
              res.set_content(metricsText(), "text/plain; version=0.0.4");
            });
  http_.Get("/v2/models/([^/]+)",
            [this](const httplib::Request &req, httplib::Response &res) {
              std::string name = req.matches[1];
              if (Model *m = find(name))
                return json(res, 200, modelMetadata(m->spec()));
              json(res, 404, errorBody("unknown model " + jsonString(name)));
            });
  http_.Get("/v2/models/([^/]+)/ready", [this](const httplib::Request &req,
                                               httplib::Response &res) {
    std::string name = req.matches[1];
    if (!find(name))
      return json(res, 404, errorBody("unknown model " + jsonString(name)));
    json(res, 200, "{\"name\":" + jsonString(name) + ",\"ready\":true}");
  });
  http_.Post("/v2/models/([^/]+)/infer",
             [this](const httplib::Request &req, httplib::Response &res) {
               infer(req, res);
             });
  // Anything else that fails (an unknown path: 404, a body over the
  // limit: 413, a bad request line: 400) answers in JSON too.
  http_.set_error_handler([](const httplib::Request &, httplib::Response &res) {
    if (!res.body.empty())
      return;
    std::string message =
        res.status == 413
            ? "the request body is larger than the limit (--max-body-bytes)"
        : res.status == 404 ? "no such endpoint"
        : res.status < 500
            ? "bad request (HTTP " + std::to_string(res.status) + ")"
            : "internal error";
    json(res, res.status, errorBody(message));
  });
  http_.set_exception_handler(
      [](const httplib::Request &, httplib::Response &res, std::exception_ptr) {
        json(res, 500, errorBody("internal error"));
      });
}

bool Server::run() {
  int threads = options_.threads;
  http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_.set_payload_max_length(options_.maxBodyBytes);
  // cpp-httplib's default also sets SO_REUSEPORT, with which a second
  // server on the same port starts and silently takes half the
  // connections: reuse the address (a restart need not wait out
  // TIME_WAIT), not the port.
  http_.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // A response's headers and body are separate writes: without this,
  // Nagle's algorithm holds the body for the client's delayed ACK.
  http_.set_tcp_nodelay(true);
  routes();
  int port = options_.port;
  bool bound = port ? http_.bind_to_port(options_.host, port)
                    : (port = http_.bind_to_any_port(options_.host)) > 0;
  if (!bound) {
    std::fprintf(stderr, "loom-serve: cannot listen on %s:%d\n",
                 options_.host.c_str(), options_.port);
    return false;
  }
  widenBacklog(port);
  std::printf("loom-serve: listening on %s:%d (%zu model%s, %d threads)\n",
              options_.host.c_str(), port, models_.size(),
              models_.size() == 1 ? "" : "s", threads);
  std::fflush(stdout);
  // Returns once stop() is called and the requests in flight are done
  // (the thread pool drains its queue before it joins).
  http_.listen_after_bind();
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (!parseArgs(argc, argv, options)) {
    usage();
    return 2;
  }
  // SIGINT and SIGTERM write their number to a pipe that a thread reads:
  // any thread may take the signal (libraries start threads before main),
  // and the handler does nothing but write(). A client that hangs up is
  // not a signal.
  if (pipe(stopPipe) != 0) {
    std::perror("loom-serve: pipe");
    return 1;
  }
  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);

  loom_instance_options instanceOptions;
  loom_instance_options_initialize(&instanceOptions);
  instanceOptions.num_threads = options.intraOpThreads;
  loom_instance *instance = nullptr;
  if (loom_status s = loom_instance_create(&instanceOptions, &instance)) {
    std::fprintf(stderr, "loom-serve: %s\n", loom_status_message(s));
    loom_status_free(s);
    return 1;
  }
  BatchOptions batching;
  batching.maxRows = options.maxBatch;
  batching.maxWait =
      std::chrono::microseconds(static_cast<int64_t>(options.maxWaitMs * 1000));
  size_t maxRuns = options.maxConcurrentRuns
                       ? static_cast<size_t>(options.maxConcurrentRuns)
                       : std::max(1u, std::thread::hardware_concurrency());
  int status = 0;
  {
    std::map<std::string, std::unique_ptr<Model>> models;
    for (const auto &[name, path] : options.models) {
      if (models.count(name)) {
        std::fprintf(stderr, "loom-serve: model '%s' is given twice\n",
                     name.c_str());
        loom_instance_release(instance);
        return 2;
      }
      std::string error;
      auto model = Model::load(instance, name, path, batching, maxRuns, error);
      if (!model) {
        std::fprintf(stderr, "loom-serve: model '%s': %s\n", name.c_str(),
                     error.c_str());
        loom_instance_release(instance);
        return 1;
      }
      std::printf("loom-serve: model '%s' from %s (%zu inputs, %zu outputs, "
                  "%s)\n",
                  name.c_str(), path.c_str(), model->spec().inputs.size(),
                  model->spec().outputs.size(),
                  model->batchable() ? "batched" : "not batched");
      models.emplace(name, std::move(model));
    }
    Server server(options, std::move(models));
    std::atomic<bool> finished{false};
    std::thread signals([&] {
      unsigned char sig = 0;
      while (read(stopPipe[0], &sig, 1) < 0 && errno == EINTR)
        ;
      if (finished)
        return;
      std::printf("loom-serve: %s: finishing the requests in flight\n",
                  sig == SIGTERM ? "SIGTERM" : "SIGINT");
      std::fflush(stdout);
      // Until run() returns: a signal that came before the server listened
      // must still stop it.
      while (!finished) {
        server.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    if (!server.run())
      status = 1;
    finished = true;
    // Wakes the signal thread when no signal came (a failed bind).
    unsigned char none = 0;
    if (write(stopPipe[1], &none, 1) < 0)
      std::perror("loom-serve: write");
    signals.join();
  }
  loom_instance_release(instance);
  if (!status)
    std::printf("loom-serve: stopped\n");
  return status;
}
