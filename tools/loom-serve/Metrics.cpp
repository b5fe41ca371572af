//===- Metrics.cpp - the server's counters, in Prometheus' format ---------===//

#include "tools/loom-serve/Metrics.h"

#include <cstdio>

namespace loom::serve {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

const std::vector<double> kLatencyBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                            0.025,  0.05,  0.1,    0.25,  0.5,
                                            1,      2.5,   5,      10};
const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128};

} // namespace

std::string labelValue(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i])
    ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string &out, const std::string &name,
                       const std::string &labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{" + labels + ",le=\"" +
           (i < bounds_.size() ? number(bounds_[i]) : "+Inf") + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += name + "_sum{" + labels + "} " + number(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

void Metrics::request(const std::string &model, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{model, status}];
  latency_.try_emplace(model, kLatencyBounds).first->second.observe(seconds);
}

void Metrics::batch(const std::string &model, size_t requests) {
  std::lock_guard<std::mutex> lock(mutex_);
  batches_.try_emplace(model, kBatchBounds)
      .first->second.observe(static_cast<double>(requests));
}

std::string Metrics::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out += "# HELP loom_serve_requests_total Inference requests by model and "
         "HTTP status.\n# TYPE loom_serve_requests_total counter\n";
  for (const auto &[key, count] : requests_)
    out += "loom_serve_requests_total{model=\"" + labelValue(key.first) +
           "\",code=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(count) + "\n";
  out += "# HELP loom_serve_request_duration_seconds Inference request "
         "latency, from parsed request to response.\n"
         "# TYPE loom_serve_request_duration_seconds histogram\n";
  for (const auto &[model, h] : latency_)
    h.render(out, "loom_serve_request_duration_seconds",
             "model=\"" + labelValue(model) + "\"");
  out += "# HELP loom_serve_batch_size Requests served by one run of the "
         "model.\n# TYPE loom_serve_batch_size histogram\n";
  for (const auto &[model, h] : batches_)
    h.render(out, "loom_serve_batch_size",
             "model=\"" + labelValue(model) + "\"");
  out += "# HELP loom_serve_inflight_requests Inference requests being "
         "served.\n# TYPE loom_serve_inflight_requests gauge\n"
         "loom_serve_inflight_requests " +
         std::to_string(inFlight.load()) + "\n";
  return out;
}

} // namespace loom::serve
