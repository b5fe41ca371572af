//===- Metrics.h - the server's counters, in Prometheus' format -*- C++ -*-===//
//
// Requests by model and status code, request latency and batch size
// histograms by model, requests in flight; the caller adds the gauges it
// reads when asked (arena bytes per model, resident memory).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMSERVE_METRICS_H
#define LOOM_TOOLS_LOOMSERVE_METRICS_H

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace loom::serve {

class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// `name`_bucket{labels,le=...}, `name`_sum and `name`_count lines.
  void render(std::string &out, const std::string &name,
              const std::string &labels) const;

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; ///< one per bound, then +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
public:
  /// One finished request on `model` ("" for none: an unknown name).
  void request(const std::string &model, int status, double seconds);
  /// One run of `model` that served `requests` requests.
  void batch(const std::string &model, size_t requests);

  std::atomic<int64_t> inFlight{0};

  /// The text of /metrics without the caller's gauges.
  std::string render() const;

private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_, batches_;
};

/// A Prometheus label value: backslash, quote and newline escaped.
std::string labelValue(const std::string &s);

} // namespace loom::serve

#endif // LOOM_TOOLS_LOOMSERVE_METRICS_H
