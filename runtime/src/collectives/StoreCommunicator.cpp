//===- StoreCommunicator.cpp - the skeleton of Gloo's and NCCL's ----------===//

#include "runtime/src/collectives/StoreCommunicator.h"

#include "runtime/src/collectives/TcpStore.h"

namespace loom::runtime::collectives {

bool checkJob(int rank, int size, int port, std::chrono::milliseconds timeout,
              std::string &error) {
  if (size < 1 || rank < 0 || rank >= size) {
    error = "rank " + std::to_string(rank) + " is not below the world size " +
            std::to_string(size);
    return false;
  }
  if (port < 0 || port > 65535) {
    error = "port " + std::to_string(port) + " is not a TCP port";
    return false;
  }
  if (timeout.count() <= 0) {
    error = "the timeout must be positive";
    return false;
  }
  return true;
}

StoreCommunicator::StoreCommunicator(int rank, int size,
                                     std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout) {}

StoreCommunicator::~StoreCommunicator() { stopWorker(); }

std::string StoreCommunicator::error() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return error_;
}

bool StoreCommunicator::recordError(const std::string &message) {
  std::lock_guard<std::mutex> lock(errorMutex_);
  if (!error_.empty())
    return false;
  error_ = message;
  return true;
}

std::string StoreCommunicator::where() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
         ": ";
}

bool StoreCommunicator::meet(const std::string &addr, int port,
                             std::string &error) {
  if (rank_ == 0) {
    server_ = StoreServer::start(port, error);
    if (!server_) {
      error = where() + error;
      return false;
    }
    if (port == 0) // a rank alone: any free port
      port = server_->port();
  }
  Clock::time_point deadline = Clock::now() + timeout_;
  store_ = TcpStore::connect(addr, port, rank_, timeout_, error);
  if (!store_) {
    error = where() + error;
    return false;
  }
  // Everyone arrives, or the missing ranks are named.
  if (!joinRendezvous(*store_, rank_, size_, deadline, timeout_,
                      addr + ":" + std::to_string(port), error)) {
    error = where() + error;
    return false;
  }
  return true;
}

void StoreCommunicator::startWorker(std::function<void()> loop) {
  worker_ = std::thread(std::move(loop));
}

void StoreCommunicator::stopWorker() {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    stop_ = true;
  }
  queueCv_.notify_all();
  if (worker_.joinable())
    worker_.join();
}

} // namespace loom::runtime::collectives
