//===- loom-launch.cpp - start the ranks of a job on this machine ---------===//
//
// loom-launch --nproc-per-node K [--nnodes N --node-rank R]
//             [--master-addr A] [--master-port P] [--timeout S]
//             [--kill-grace S] -- COMMAND ARGS...
//
// Starts K copies of COMMAND on this machine, one per rank, with the
// environment the runtime's rendezvous reads (torchrun's): RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
// MASTER_PORT and, with --timeout, LOOM_COLLECTIVE_TIMEOUT. On one node
// (the default) the ranks are 0..K-1, MASTER_ADDR is 127.0.0.1 and
// MASTER_PORT a free port unless given. With --nnodes N, one launcher runs
// on each node with its --node-rank R (0..N-1), all with the same
// --master-addr (node 0's address, reachable from the others) and
// --master-port: node R's ranks are R*K .. R*K+K-1 of N*K, and rank 0
// serves the rendezvous. --nproc is --nproc-per-node. Each line a rank
// writes is prefixed with "[rank K] " (its global rank) on the same
// stream.
// SIGINT and SIGTERM are forwarded to every rank. When a rank fails (a
// non-zero exit or a signal), the others get --kill-grace seconds
// (default 3) to end on their own -- their communicators fail and name the
// rank -- then SIGTERM, then SIGKILL 5 s later; loom-launch exits with the
// first failure's status (128 + signal for a signal) and names it.
//
// Plain C++ and POSIX: no MLIR, no runtime.
//
//===----------------------------------------------------------------------===//

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

const char *kUsage =
    "usage: loom-launch --nproc-per-node K [--nnodes N --node-rank R]\n"
    "                   [--master-addr A] [--master-port P] [--timeout S]\n"
    "                   [--kill-grace S] -- COMMAND [ARGS...]\n"
    "Starts K local ranks of COMMAND with RANK, WORLD_SIZE, LOCAL_RANK,\n"
    "LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT set;\n"
    "prefixes their output with [rank K]; stops them all when one fails.\n"
    "Several nodes: one launcher per node, each with --nnodes N and its\n"
    "--node-rank, all with node 0's --master-addr and one --master-port.\n"
    "--nproc is --nproc-per-node.\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "loom-launch: error: %s\n", message.c_str());
  return 2;
}

/// A self-pipe the signal handlers write the signal number to.
int signalPipe[2] = {-1, -1};

void onSignal(int sig) {
  int saved = errno;
  char c = static_cast<char>(sig);
  (void)!write(signalPipe[1], &c, 1);
  errno = saved;
}

/// A port free on the loopback interface now.
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

bool parseNumber(const char *text, double max, double &out) {
  char *end = nullptr;
  errno = 0;
  out = std::strtod(text, &end);
  return !errno && end != text && !*end && out >= 0 && out <= max;
}

/// One output stream of one rank: what arrived since the last newline.
struct Stream {
  int fd = -1;
  FILE *to = nullptr;
  std::string pending;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  Stream out, err;
};

/// Global rank of this launcher's local rank 0.
int firstRank = 0;

void emit(Stream &s, int local, bool all) {
  int rank = firstRank + local;
  std::string prefix = "[rank " + std::to_string(rank) + "] ";
  size_t start = 0, nl;
  while ((nl = s.pending.find('\n', start)) != std::string::npos) {
    std::string line = prefix + s.pending.substr(start, nl - start + 1);
    std::fwrite(line.data(), 1, line.size(), s.to);
    start = nl + 1;
  }
  s.pending.erase(0, start);
  if (all && !s.pending.empty()) {
    std::string line = prefix + s.pending + "\n";
    std::fwrite(line.data(), 1, line.size(), s.to);
    s.pending.clear();
  }
  std::fflush(s.to);
}

std::string describeStatus(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char *name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" +
           (name ? name : "?") + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exitCodeOf(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

void signalAll(std::vector<Rank> &ranks, int sig) {
  for (Rank &r : ranks)
    if (r.running)
      kill(-r.pid, sig); // the rank's process group: its children too
}

} // namespace

int main(int argc, char **argv) {
  int nproc = 0, port = 0, nnodes = 1, nodeRank = 0;
  bool hasNodeRank = false;
  std::string masterAddr;
  double timeout = 0, grace = 3;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc)
      return fail("option '" + a + "' needs a value\n" + kUsage);
    const char *v = argv[++i];
    double x;
    if (a == "--nproc" || a == "--nproc-per-node") {
      if (!parseNumber(v, 4096, x) || x < 1 || x != static_cast<int>(x))
        return fail(a + " '" + v + "' is not a number of ranks (1 to 4096)");
      nproc = static_cast<int>(x);
    } else if (a == "--nnodes") {
      if (!parseNumber(v, 4096, x) || x < 1 || x != static_cast<int>(x))
        return fail(std::string("--nnodes '") + v +
                    "' is not a number of nodes (1 to 4096)");
      nnodes = static_cast<int>(x);
    } else if (a == "--node-rank") {
      if (!parseNumber(v, 4095, x) || x != static_cast<int>(x))
        return fail(std::string("--node-rank '") + v +
                    "' is not a node number (0 to 4095)");
      nodeRank = static_cast<int>(x);
      hasNodeRank = true;
    } else if (a == "--master-addr") {
      if (!*v)
        return fail("--master-addr is empty");
      masterAddr = v;
    } else if (a == "--master-port") {
      if (!parseNumber(v, 65535, x) || x < 1 || x != static_cast<int>(x))
        return fail(std::string("--master-port '") + v + "' is not a TCP port");
      port = static_cast<int>(x);
    } else if (a == "--timeout") {
      if (!parseNumber(v, 1e7, timeout) || timeout <= 0)
        return fail(std::string("--timeout '") + v +
                    "' is not a positive number of seconds");
    } else if (a == "--kill-grace") {
      if (!parseNumber(v, 1e5, grace))
        return fail(std::string("--kill-grace '") + v +
                    "' is not a number of seconds");
    } else {
      return fail("unknown option '" + a + "'\n" + kUsage);
    }
  }
  if (!nproc)
    return fail(std::string("--nproc-per-node is required\n") + kUsage);
  if (i >= argc)
    return fail(std::string("no command after '--'\n") + kUsage);
  if (nodeRank >= nnodes)
    return fail("--node-rank " + std::to_string(nodeRank) +
                " is not below --nnodes " + std::to_string(nnodes));
  if (nnodes > 1 && !hasNodeRank)
    return fail("--nnodes " + std::to_string(nnodes) +
                " needs --node-rank: which node this launcher starts (0 on "
                "the node whose address is --master-addr)");
  if (nnodes > 1 && !port)
    return fail("--nnodes " + std::to_string(nnodes) +
                " needs --master-port: the launchers of every node must "
                "name the same rendezvous port");
  if (static_cast<long>(nnodes) * nproc > (1 << 24))
    return fail("--nnodes x --nproc-per-node is more than 16777216 ranks");
  if (masterAddr.empty())
    masterAddr = "127.0.0.1";
  if (!port && !(port = freePort()))
    return fail("cannot find a free port on 127.0.0.1; give --master-port");
  firstRank = nodeRank * nproc;
  const int worldSize = nnodes * nproc;

  if (pipe2(signalPipe, O_CLOEXEC | O_NONBLOCK) < 0)
    return fail(std::string("pipe: ") + std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGHUP})
    sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Ranks do not inherit another launcher's idea of their rank.
  for (const char *v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
                        "SLURM_NTASKS", "SLURM_LOCALID"})
    unsetenv(v);

  std::vector<Rank> ranks(nproc);
  for (int r = 0; r < nproc; ++r) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
      signalAll(ranks, SIGKILL);
      return fail(std::string("pipe: ") + std::strerror(errno));
    }
    // Signals wait until the child has its default handlers back (ours
    // would write to the launcher's pipe).
    sigset_t all, previous;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &previous);
    pid_t pid = fork();
    if (pid != 0)
      sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (pid < 0) {
      signalAll(ranks, SIGKILL);
      return fail(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      setpgid(0, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGHUP, SIGPIPE})
        sigaction(sig, &dfl, nullptr);
      close(signalPipe[0]);
      close(signalPipe[1]);
      sigprocmask(SIG_SETMASK, &previous, nullptr);
      setenv("RANK", std::to_string(firstRank + r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(worldSize).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("GROUP_RANK", std::to_string(nodeRank).c_str(), 1);
      setenv("MASTER_ADDR", masterAddr.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      if (timeout > 0) {
        char t[32];
        std::snprintf(t, sizeof(t), "%g", timeout);
        setenv("LOOM_COLLECTIVE_TIMEOUT", t, 1);
      }
      execvp(argv[i], argv + i);
      std::fprintf(stderr, "loom-launch: cannot run '%s': %s\n", argv[i],
                   std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid); // also here: no race with a signal to the group
    close(out[1]);
    close(err[1]);
    ranks[r].pid = pid;
    ranks[r].running = true;
    ranks[r].out = {out[0], stdout, ""};
    ranks[r].err = {err[0], stderr, ""};
  }

  int firstFailed = -1, forwarded = 0;
  Clock::time_point termAt{}, killAt{}, lastExit{};
  bool termSent = false, killSent = false;
  for (;;) {
    // Reap whoever ended.
    for (int r = 0; r < nproc; ++r) {
      Rank &rk = ranks[r];
      if (!rk.running)
        continue;
      int status;
      if (waitpid(rk.pid, &status, WNOHANG) != rk.pid)
        continue;
      rk.running = false;
      rk.status = status;
      lastExit = Clock::now();
      bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed && firstFailed < 0 && !forwarded && !termSent) {
        firstFailed = r;
        std::fprintf(stderr,
                     "loom-launch: rank %d %s; stopping the other ranks\n",
                     firstRank + r, describeStatus(status).c_str());
        termAt = Clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(grace * 1000));
      }
    }
    bool anyRunning = false, anyOpen = false;
    for (Rank &rk : ranks) {
      anyRunning |= rk.running;
      anyOpen |= rk.out.fd >= 0 || rk.err.fd >= 0;
    }
    Clock::time_point now = Clock::now();
    // Done when every rank has ended and its output is read (a process a
    // rank left behind may hold a pipe: 2 s, not forever).
    if (!anyRunning && (!anyOpen || now - lastExit > std::chrono::seconds(2)))
      break;
    if (firstFailed >= 0 && anyRunning && !termSent && now >= termAt) {
      signalAll(ranks, SIGTERM);
      termSent = true;
      killAt = now + std::chrono::seconds(5);
    }
    if (termSent && anyRunning && !killSent && now >= killAt) {
      signalAll(ranks, SIGKILL);
      killSent = true;
    }

    std::vector<pollfd> fds = {{signalPipe[0], POLLIN, 0}};
    std::vector<Stream *> streams = {nullptr};
    std::vector<int> owner = {-1};
    for (int r = 0; r < nproc; ++r)
      for (Stream *s : {&ranks[r].out, &ranks[r].err})
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          streams.push_back(s);
          owner.push_back(r);
        }
    if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR)
      break;
    if (fds[0].revents & POLLIN) {
      char sigs[64];
      ssize_t n = read(signalPipe[0], sigs, sizeof(sigs));
      for (ssize_t k = 0; k < n; ++k) {
        int sig = sigs[k];
        if (sig == SIGCHLD)
          continue;
        // A second interrupt kills.
        signalAll(ranks, forwarded ? SIGKILL : sig);
        if (!forwarded)
          forwarded = sig;
      }
    }
    for (size_t k = 1; k < fds.size(); ++k) {
      if (!fds[k].revents)
        continue;
      Stream &s = *streams[k];
      char buf[65536];
      ssize_t n = read(s.fd, buf, sizeof(buf));
      if (n > 0) {
        s.pending.append(buf, static_cast<size_t>(n));
        emit(s, owner[k], false);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        emit(s, owner[k], true);
        close(s.fd);
        s.fd = -1;
      }
    }
  }

  if (forwarded) {
    std::fprintf(stderr, "loom-launch: stopped by signal %d (%s)\n", forwarded,
                 strsignal(forwarded));
    return 128 + forwarded;
  }
  if (firstFailed >= 0) {
    std::fprintf(stderr, "loom-launch: failed: rank %d %s\n",
                 firstRank + firstFailed,
                 describeStatus(ranks[firstFailed].status).c_str());
    int code = exitCodeOf(ranks[firstFailed].status);
    return code ? code : 1;
  }
  return 0;
}
