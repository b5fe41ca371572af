//===- serve_load.cpp - load an inference server over loopback ------------===//
//
//   loom-bench-serve --port P --model NAME [--host H] [--rows R]
//                    [--concurrency 1,4,16,64] [--seconds S]
//                    [--soak-seconds 300] [--soak-concurrency C]
//                    [--pid PID] [--rss-every 5]
//
// A client of the Open Inference Protocol v2 (loom-serve, or any server
// that speaks it, such as bench/serve/ort_serve.js): reads the model's
// metadata, makes one request of R rows of seeded random data, and sends it
// from C keep-alive connections at once, each waiting for its answer before
// the next, for S seconds per level of C. Prints per level: throughput,
// p50/p99 latency, errors (a failed connection or a status other than
// 200). Then a soak: the same at --soak-concurrency for --soak-seconds,
// sampling the server's resident memory (/proc/PID/statm, same machine)
// every --rss-every seconds.
//
//===----------------------------------------------------------------------===//

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Options {
  std::string host = "127.0.0.1", model;
  int port = 0, rows = 1, soakConcurrency = 16, rssEvery = 5;
  std::vector<int> levels = {1, 4, 16, 64};
  double seconds = 10, soakSeconds = 300;
  long pid = 0;
};

struct Result {
  double seconds = 0;
  std::vector<double> latencies; // ms, of the answered requests
  size_t errors = 0;
};

double percentile(std::vector<double> &v, double p) {
  if (v.empty())
    return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

double rssMiB(long pid) {
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  size_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident))
    return -1;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

/// One request body for `model`'s metadata: dynamic dims take `rows`.
bool makeBody(const Options &o, std::string &body) {
  httplib::Client cli(o.host, o.port);
  auto res = cli.Get("/v2/models/" + o.model);
  if (!res || res->status != 200) {
    std::fprintf(stderr, "loom-bench-serve: no metadata for '%s'\n",
                 o.model.c_str());
    return false;
  }
  json meta = json::parse(res->body);
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1, 1);
  json inputs = json::array();
  for (const json &in : meta["inputs"]) {
    std::vector<int64_t> shape = in["shape"].get<std::vector<int64_t>>();
    size_t count = 1;
    for (int64_t &d : shape) {
      d = d < 0 ? o.rows : d;
      count *= static_cast<size_t>(d);
    }
    std::string datatype = in["datatype"];
    json data = json::array();
    for (size_t i = 0; i < count; ++i) {
      if (datatype == "FP32" || datatype == "FP64")
        data.push_back(dist(rng));
      else if (datatype == "BOOL")
        data.push_back(false);
      else
        data.push_back(0);
    }
    inputs.push_back({{"name", in["name"]},
                      {"shape", shape},
                      {"datatype", datatype},
                      {"data", data}});
  }
  body = json{{"inputs", inputs}}.dump();
  return true;
}

/// `concurrency` clients for `seconds`; `sample` is called about once a
/// second from the calling thread while they run.
Result load(const Options &o, const std::string &body, int concurrency,
            double seconds, const std::function<void(double)> &sample) {
  std::string path = "/v2/models/" + o.model + "/infer";
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(seconds));
  std::vector<Result> perThread(concurrency);
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t)
    threads.emplace_back([&, t] {
      httplib::Client cli(o.host, o.port);
      cli.set_keep_alive(true);
      // Headers and body go out in separate writes: without this, Nagle's
      // algorithm holds the body for the server's delayed ACK (~40 ms).
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(60, 0);
      Result &r = perThread[t];
      while (Clock::now() < deadline) {
        auto t0 = Clock::now();
        auto res = cli.Post(path, body, "application/json");
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0)
                        .count();
        if (!res || res->status != 200)
          ++r.errors;
        else
          r.latencies.push_back(ms);
      }
    });
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    sample(std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (auto &th : threads)
    th.join();
  Result all;
  all.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (Result &r : perThread) {
    all.latencies.insert(all.latencies.end(), r.latencies.begin(),
                         r.latencies.end());
    all.errors += r.errors;
  }
  return all;
}

void report(const char *what, int concurrency, Result &r) {
  size_t n = r.latencies.size();
  double p50 = percentile(r.latencies, 0.50);
  double p99 = percentile(r.latencies, 0.99);
  std::printf("%s concurrency %3d: %9.1f req/s  p50 %8.3f ms  p99 %8.3f ms  "
              "errors %zu  (%zu answered in %.1f s)\n",
              what, concurrency, n / r.seconds, p50, p99, r.errors, n,
              r.seconds);
  std::fflush(stdout);
}

bool parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc)
      return false;
    std::string v = argv[++i];
    if (a == "--host")
      o.host = v;
    else if (a == "--port")
      o.port = std::atoi(v.c_str());
    else if (a == "--model")
      o.model = v;
    else if (a == "--rows")
      o.rows = std::atoi(v.c_str());
    else if (a == "--seconds")
      o.seconds = std::atof(v.c_str());
    else if (a == "--soak-seconds")
      o.soakSeconds = std::atof(v.c_str());
    else if (a == "--soak-concurrency")
      o.soakConcurrency = std::atoi(v.c_str());
    else if (a == "--pid")
      o.pid = std::atol(v.c_str());
    else if (a == "--rss-every")
      o.rssEvery = std::max(1, std::atoi(v.c_str()));
    else if (a == "--concurrency") {
      o.levels.clear();
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ','))
        if (int c = std::atoi(item.c_str()); c > 0)
          o.levels.push_back(c);
    } else
      return false;
  }
  return o.port > 0 && !o.model.empty() && o.rows > 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseArgs(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: loom-bench-serve --port P --model NAME [--host H] "
                 "[--rows R]\n  [--concurrency 1,4,16,64] [--seconds S] "
                 "[--soak-seconds 300]\n  [--soak-concurrency C] [--pid PID] "
                 "[--rss-every 5]\n");
    return 2;
  }
  std::string body;
  if (!makeBody(o, body))
    return 1;
  std::printf("model %s, %d row(s) per request, %zu-byte body\n",
              o.model.c_str(), o.rows, body.size());
  size_t errors = 0;
  for (int c : o.levels) {
    Result r = load(o, body, c, o.seconds, [](double) {});
    errors += r.errors;
    report("load", c, r);
  }
  if (o.soakSeconds > 0) {
    std::vector<double> rss;
    double next = 0;
    auto sample = [&](double t) {
      if (!o.pid || t < next)
        return;
      next += o.rssEvery;
      rss.push_back(rssMiB(o.pid));
      std::printf("soak t=%6.0f s  rss %8.1f MiB\n", t, rss.back());
      std::fflush(stdout);
    };
    if (o.pid)
      rss.push_back(rssMiB(o.pid));
    Result r = load(o, body, o.soakConcurrency, o.soakSeconds, sample);
    errors += r.errors;
    report("soak", o.soakConcurrency, r);
    if (o.pid && rss.size() > 1) {
      auto [lo, hi] = std::minmax_element(rss.begin() + 1, rss.end());
      std::printf("soak rss MiB: before %.1f, first sample %.1f, min %.1f, "
                  "max %.1f, last %.1f\n",
                  rss.front(), rss[1], *lo, *hi, rss.back());
    }
  }
  std::printf("errors total %zu\n", errors);
  return errors ? 1 : 0;
}
