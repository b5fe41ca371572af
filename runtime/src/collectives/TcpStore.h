//===- TcpStore.h - the rendezvous key-value store over TCP -----*- C++ -*-===//
//
// Gloo meets its peers through a key-value store and ships none over TCP.
// Rank 0 serves one (StoreServer) on MASTER_ADDR:MASTER_PORT; every rank,
// rank 0 included, holds one connection to it (TcpStore) for the life of
// its communicator. The server also watches those connections: a rank whose
// connection closes without a goodbye has died, and deadRanks() names it
// to the others when their collectives fail.
//
// Wire format: frames of a little-endian u32 length and a payload; a
// request is an op byte then length-prefixed fields, a reply a status byte
// then fields. Needs exceptions (gloo::rendezvous::Store throws).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_TCPSTORE_H
#define LOOM_RUNTIME_COLLECTIVES_TCPSTORE_H

#include <gloo/rendezvous/store.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace loom::runtime::collectives {

using Clock = std::chrono::steady_clock;

/// The store served by rank 0: keys and values in memory, one thread.
class StoreServer {
public:
  /// Listens on `port` of every interface (0: a free port). Null with
  /// `error` set when the port cannot be bound.
  static std::unique_ptr<StoreServer> start(int port, std::string &error);
  ~StoreServer();
  int port() const { return port_; }
  /// Waits until no rank is connected or `deadline` passes.
  void drain(Clock::time_point deadline);

private:
  StoreServer() = default;
  void serve();

  struct Client {
    int fd = -1;
    int rank = -1;
    bool goodbye = false;
    std::string in;
  };
  /// Handles one request; false closes the connection.
  bool handle(Client &client, const std::string &request);

  int listenFd_ = -1, wakeRead_ = -1, wakeWrite_ = -1, port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_; // guards what follows, read by drain()
  std::map<std::string, std::string> data_;
  std::vector<Client> clients_;
  std::set<int> dead_;
};

/// One rank's connection to the store.
class TcpStore : public gloo::rendezvous::Store {
public:
  /// Connects to `addr`:`port`, retrying until `timeout` passes (the
  /// server may not listen yet), and introduces itself as `rank`. Null
  /// with `error` set on failure.
  static std::unique_ptr<TcpStore> connect(const std::string &addr, int port,
                                           int rank,
                                           std::chrono::milliseconds timeout,
                                           std::string &error);
  ~TcpStore() override;

  // gloo::rendezvous::Store: throw gloo::IoException on failure; get and
  // wait block until the keys are set or the timeout passes.
  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

  /// Non-throwing forms: false with `error` when the store is unreachable.
  bool trySet(const std::string &key, const std::string &value,
              std::string &error);
  /// `found` says whether the key is set.
  bool tryGet(const std::string &key, std::string &value, bool &found,
              std::string &error);
  /// The ranks whose connection closed without a goodbye.
  bool deadRanks(std::vector<int> &ranks, std::string &error);
  /// Says goodbye and closes the connection (a clean exit, not a death).
  void close(bool goodbye = true);
  /// Whether the connection is open (not closed, not lost).
  bool open() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fd_ >= 0;
  }
  /// The local address of the connection: the interface that reaches the
  /// store's host.
  const std::string &localAddress() const { return local_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

private:
  TcpStore() = default;
  bool request(const std::string &payload, std::string &reply,
               std::string &error);

  std::mutex mutex_;
  int fd_ = -1;
  std::string peer_, local_;
  std::chrono::milliseconds timeout_{0};
};

/// The rendezvous of a job: this rank says it has arrived (and the world
/// size it was given), then waits until every rank has, until `deadline`.
/// False with `error` naming the ranks that never arrived (`where`, the
/// store's address, and `timeout` go into the message) or a rank started
/// with another world size.
bool joinRendezvous(TcpStore &store, int rank, int size,
                    std::chrono::steady_clock::time_point deadline,
                    std::chrono::milliseconds timeout, const std::string &where,
                    std::string &error);

} // namespace loom::runtime::collectives

#endif // LOOM_RUNTIME_COLLECTIVES_TCPSTORE_H
