//===- TcpStore.cpp - the rendezvous key-value store over TCP -------------===//

#include "runtime/src/collectives/TcpStore.h"

#include "runtime/src/collectives/Communicator.h"

#include <gloo/common/error.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace loom::runtime::collectives {

namespace {

std::string errnoString() { return std::strerror(errno); }

int64_t msUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return std::max<int64_t>(left, 0);
}

/// Writes all of `data`; false on error or when `deadline` passes.
bool sendAll(int fd, const char *data, size_t size,
             Clock::time_point deadline) {
  while (size) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return false;
    pollfd p{fd, POLLOUT, 0};
    int64_t left = msUntil(deadline);
    if (!left || ::poll(&p, 1, static_cast<int>(left)) < 0)
      return false;
  }
  return true;
}

/// Reads exactly `size` bytes; false on error, end of stream or deadline.
bool recvAll(int fd, char *data, size_t size, Clock::time_point deadline) {
  while (size) {
    pollfd p{fd, POLLIN, 0};
    int64_t left = msUntil(deadline);
    int r = left ? ::poll(&p, 1, static_cast<int>(left)) : 0;
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    ssize_t n = ::recv(fd, data, size, 0);
    if (n <= 0) {
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void putU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t getU32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void putField(std::string &out, const std::string &field) {
  putU32(out, static_cast<uint32_t>(field.size()));
  out += field;
}

/// Reads the field at `pos` of `payload`; false when truncated.
bool getField(const std::string &payload, size_t &pos, std::string &field) {
  if (payload.size() - pos < 4)
    return false;
  uint32_t n = getU32(payload.data() + pos);
  pos += 4;
  if (payload.size() - pos < n)
    return false;
  field.assign(payload, pos, n);
  pos += n;
  return true;
}

std::string frame(const std::string &payload) {
  std::string f;
  putU32(f, static_cast<uint32_t>(payload.size()));
  return f + payload;
}

/// Frames larger than this are refused (a stray connection, not a rank).
constexpr uint32_t kMaxFrame = 64u << 20;

std::string addressString(const sockaddr *sa) {
  char host[NI_MAXHOST] = "?";
  getnameinfo(sa,
              sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                        : sizeof(sockaddr_in),
              host, sizeof(host), nullptr, 0, NI_NUMERICHOST);
  return host;
}

} // namespace

//===----------------------------------------------------------------------===//
// StoreServer
//===----------------------------------------------------------------------===//

std::unique_ptr<StoreServer> StoreServer::start(int port, std::string &error) {
  std::unique_ptr<StoreServer> s(new StoreServer());
  s->listenFd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = s->listenFd_ >= 0;
  if (!v6)
    s->listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listenFd_ < 0) {
    error = "cannot create the rendezvous socket: " + errnoString();
    return nullptr;
  }
  int one = 1, zero = 0;
  setsockopt(s->listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    // Both IPv4 and IPv6 peers.
    setsockopt(s->listenFd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(s->listenFd_, reinterpret_cast<sockaddr *>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(s->listenFd_, reinterpret_cast<sockaddr *>(&a), sizeof(a));
  }
  if (rc < 0 || ::listen(s->listenFd_, 1024) < 0) {
    error = "rank 0 cannot serve the rendezvous on port " +
            std::to_string(port) + ": " + errnoString() +
            " (is another job using MASTER_PORT?)";
    return nullptr;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(s->listenFd_, reinterpret_cast<sockaddr *>(&bound), &len);
  s->port_ = ntohs(bound.ss_family == AF_INET6
                       ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                       : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC | O_NONBLOCK) < 0) {
    error = "cannot create a pipe: " + errnoString();
    return nullptr;
  }
  s->wakeRead_ = pipeFds[0];
  s->wakeWrite_ = pipeFds[1];
  s->thread_ = std::thread([server = s.get()] { server->serve(); });
  return s;
}

StoreServer::~StoreServer() {
  stop_ = true;
  if (wakeWrite_ >= 0) {
    char c = 0;
    (void)!::write(wakeWrite_, &c, 1);
  }
  if (thread_.joinable())
    thread_.join();
  for (Client &c : clients_)
    ::close(c.fd);
  for (int fd : {listenFd_, wakeRead_, wakeWrite_})
    if (fd >= 0)
      ::close(fd);
}

void StoreServer::drain(Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (clients_.empty())
        return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool StoreServer::handle(Client &client, const std::string &request) {
  if (request.empty())
    return false;
  size_t pos = 1;
  std::string reply = "K", key, value;
  std::lock_guard<std::mutex> lock(mutex_);
  switch (request[0]) {
  case 'H': { // hello: the rank of this connection
    if (!getField(request, pos, key))
      return false;
    int rank = std::atoi(key.c_str());
    for (const Client &c : clients_)
      if (c.rank == rank && &c != &client) {
        reply = "E";
        putField(reply, "rank " + key +
                            " joined twice (two processes were "
                            "given the same RANK)");
      }
    if (reply == "K")
      client.rank = rank;
    break;
  }
  case 'S': // set key value
    if (!getField(request, pos, key) || !getField(request, pos, value))
      return false;
    data_[key] = value;
    break;
  case 'G': { // get key: found or missing
    if (!getField(request, pos, key))
      return false;
    auto it = data_.find(key);
    if (it == data_.end()) {
      reply = "M";
    } else {
      reply = "F";
      putField(reply, it->second);
    }
    break;
  }
  case 'D': // dead ranks
    putU32(reply, static_cast<uint32_t>(dead_.size()));
    for (int r : dead_)
      putU32(reply, static_cast<uint32_t>(r));
    break;
  case 'B': // goodbye
    client.goodbye = true;
    break;
  default:
    return false;
  }
  return sendAll(client.fd, frame(reply).data(), frame(reply).size(),
                 Clock::now() + std::chrono::seconds(5));
}

void StoreServer::serve() {
  std::vector<pollfd> fds;
  while (!stop_) {
    fds.clear();
    fds.push_back({wakeRead_, POLLIN, 0});
    fds.push_back({listenFd_, POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const Client &c : clients_)
        fds.push_back({c.fd, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      return;
    if (stop_)
      return;
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        std::lock_guard<std::mutex> lock(mutex_);
        clients_.push_back(Client{fd});
      }
    }
    // Clients: read what arrived, handle whole frames, drop closed ones.
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents)
        continue;
      size_t index = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        while (index < clients_.size() && clients_[index].fd != fds[i].fd)
          ++index;
      }
      Client &c = clients_[index];
      char buf[65536];
      ssize_t n = ::recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      bool open = n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
      if (n > 0)
        c.in.append(buf, static_cast<size_t>(n));
      while (open && c.in.size() >= 4) {
        uint32_t len = getU32(c.in.data());
        if (len > kMaxFrame) {
          open = false;
          break;
        }
        if (c.in.size() < 4 + len)
          break;
        std::string request = c.in.substr(4, len);
        c.in.erase(0, 4 + len);
        open = handle(c, request);
      }
      if (!open) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (c.rank >= 0 && !c.goodbye)
          dead_.insert(c.rank);
        ::close(c.fd);
        clients_.erase(clients_.begin() + static_cast<ptrdiff_t>(index));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// TcpStore
//===----------------------------------------------------------------------===//

std::unique_ptr<TcpStore> TcpStore::connect(const std::string &addr, int port,
                                            int rank,
                                            std::chrono::milliseconds timeout,
                                            std::string &error) {
  std::unique_ptr<TcpStore> s(new TcpStore());
  s->timeout_ = timeout;
  s->peer_ = addr + ":" + std::to_string(port);
  Clock::time_point deadline = Clock::now() + timeout;
  addrinfo hints{}, *found = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  std::string lastError;
  // Retry until the deadline: rank 0 may not listen yet.
  for (int attempt = 0;; ++attempt) {
    int rc =
        getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      lastError =
          std::string("cannot resolve '") + addr + "': " + gai_strerror(rc);
    } else {
      for (addrinfo *ai = found; ai && s->fd_ < 0; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                          ai->ai_protocol);
        if (fd < 0)
          continue;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
          s->fd_ = fd;
          break;
        }
        lastError = errnoString();
        ::close(fd);
      }
      freeaddrinfo(found);
    }
    if (s->fd_ >= 0 || Clock::now() >= deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(
        std::min(10 + 10 * attempt, 200), msUntil(deadline))));
  }
  if (s->fd_ < 0) {
    error = "rank " + std::to_string(rank) +
            " cannot reach the rendezvous of rank 0 at " + s->peer_ +
            " within " + std::to_string(timeout.count() / 1000.0).substr(0, 5) +
            " s (" + lastError +
            "): rank 0 never arrived, or MASTER_ADDR/MASTER_PORT are wrong";
    return nullptr;
  }
  int one = 1;
  setsockopt(s->fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  getsockname(s->fd_, reinterpret_cast<sockaddr *>(&local), &len);
  s->local_ = addressString(reinterpret_cast<sockaddr *>(&local));
  if (s->local_.rfind("::ffff:", 0) == 0)
    s->local_ = s->local_.substr(7); // an IPv4 peer of an IPv6 socket
  std::string hello = "H", reply;
  putField(hello, std::to_string(rank));
  if (!s->request(hello, reply, error))
    return nullptr;
  if (reply[0] == 'E') {
    size_t pos = 1;
    getField(reply, pos, error);
    return nullptr;
  }
  return s;
}

TcpStore::~TcpStore() { close(false); }

void TcpStore::close(bool goodbye) {
  std::string reply, error;
  if (goodbye && fd_ >= 0)
    request("B", reply, error);
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

bool TcpStore::request(const std::string &payload, std::string &reply,
                       std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  char len[4];
  if (fd_ < 0) {
    error = "the rendezvous store at " + peer_ + " is closed";
    return false;
  }
  std::string f = frame(payload);
  if (!sendAll(fd_, f.data(), f.size(), deadline) ||
      !recvAll(fd_, len, 4, deadline) || getU32(len) > kMaxFrame ||
      (reply.resize(getU32(len)),
       !recvAll(fd_, reply.data(), reply.size(), deadline)) ||
      reply.empty()) {
    error = "lost the rendezvous store of rank 0 at " + peer_ +
            ": rank 0 died or closed its communicator";
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  return true;
}

bool TcpStore::trySet(const std::string &key, const std::string &value,
                      std::string &error) {
  std::string payload = "S", reply;
  putField(payload, key);
  putField(payload, value);
  return request(payload, reply, error);
}

bool TcpStore::tryGet(const std::string &key, std::string &value, bool &found,
                      std::string &error) {
  std::string payload = "G", reply;
  putField(payload, key);
  if (!request(payload, reply, error))
    return false;
  found = reply[0] == 'F';
  size_t pos = 1;
  if (found && !getField(reply, pos, value)) {
    error = "the rendezvous store sent a truncated reply";
    return false;
  }
  return true;
}

bool TcpStore::deadRanks(std::vector<int> &ranks, std::string &error) {
  std::string reply;
  if (!request("D", reply, error))
    return false;
  ranks.clear();
  if (reply.size() < 5)
    return true;
  uint32_t n = getU32(reply.data() + 1);
  for (uint32_t i = 0; i < n && 5 + 4 * (i + 1) <= reply.size(); ++i)
    ranks.push_back(static_cast<int>(getU32(reply.data() + 5 + 4 * i)));
  return true;
}

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  std::string error;
  if (!trySet(key, std::string(data.begin(), data.end()), error))
    throw gloo::IoException(error);
}

std::vector<char> TcpStore::get(const std::string &key) {
  wait({key}, timeout_);
  std::string value, error;
  bool found = false;
  if (!tryGet(key, value, found, error))
    throw gloo::IoException(error);
  return std::vector<char>(value.begin(), value.end());
}

void TcpStore::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout_);
}

void TcpStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  Clock::time_point nextDeathCheck = Clock::now();
  std::string value, error;
  std::vector<int> dead;
  for (const std::string &key : keys) {
    for (int attempt = 0;; ++attempt) {
      bool found = false;
      if (!tryGet(key, value, found, error))
        throw gloo::IoException(error);
      if (found)
        break;
      if (Clock::now() >= deadline)
        throw gloo::IoException("timed out after " +
                                std::to_string(timeout.count()) +
                                " ms waiting for rendezvous key '" + key + "'");
      // A key a dead rank would have set never comes: fail now.
      if (Clock::now() >= nextDeathCheck) {
        if (!deadRanks(dead, error))
          throw gloo::IoException(error);
        if (!dead.empty())
          throw gloo::IoException("rank " + std::to_string(dead.front()) +
                                  " died before setting rendezvous key '" +
                                  key + "'");
        nextDeathCheck = Clock::now() + std::chrono::milliseconds(100);
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min(1 + attempt, 20)));
    }
  }
}

bool joinRendezvous(TcpStore &store, int rank, int size,
                    std::chrono::steady_clock::time_point deadline,
                    std::chrono::milliseconds timeout, const std::string &where,
                    std::string &error) {
  if (!store.trySet("loom/join/" + std::to_string(rank), std::to_string(size),
                    error))
    return false;
  std::vector<int> missing;
  for (int attempt = 0;; ++attempt) {
    missing.clear();
    for (int r = 0; r < size; ++r) {
      std::string value;
      bool found = false;
      if (!store.tryGet("loom/join/" + std::to_string(r), value, found, error))
        return false;
      if (!found) {
        missing.push_back(r);
      } else if (value != std::to_string(size)) {
        error = "rank " + std::to_string(r) + " was started with " +
                "WORLD_SIZE " + value + ", this rank with " +
                std::to_string(size);
        return false;
      }
    }
    if (missing.empty())
      return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      error = "the rendezvous at " + where + " timed out after " +
              secondsString(timeout) + ": " + rankList(missing) +
              " never arrived (LOOM_COLLECTIVE_TIMEOUT sets the timeout)";
      return false;
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min(1 + attempt, 20)));
  }
}

} // namespace loom::runtime::collectives
