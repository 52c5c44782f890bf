//===- Bootstrap.cpp - MPI worlds started by environment variables --------===//
//
// See Bootstrap.h. Plain POSIX sockets carry the few short messages of the
// rendezvous (a hello, the server's address, the MPI port name): a store
// library (torch's TCPStore, PMIx's) would be a dependency for three
// messages, and Open MPI's own rendezvous needs an address to start from,
// which is what these messages deliver.
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera {
namespace rt {
namespace mpi {

namespace {

constexpr const char *kHello = "tessera-rendezvous/1";
constexpr uint32_t kMaxMessage = 1 << 16;
/// The byte a rank sends on its rendezvous connections when it finishes.
constexpr char kFinishing = 'F';

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char *env(const char *name) {
  const char *value = std::getenv(name);
  return value && *value ? value : nullptr;
}

/// A whole decimal number in [lo, hi], or Error naming the variable.
long parseInt(const char *name, const char *text, long lo, long hi) {
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno || end == text || *end || value < lo || value > hi)
    throw Error(std::string(name) + "='" + text + "' is not a number in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return value;
}

std::string errnoText() { return std::strerror(errno); }

/// Waits until `fd` is ready for `events` or the deadline passes.
void waitFor(int fd, short events, double deadline, const std::string &what) {
  for (;;) {
    double left = deadline - now();
    if (left <= 0)
      throw Error(what + ": timed out");
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (rc > 0)
      return;
    if (rc < 0 && errno != EINTR)
      throw Error(what + ": poll failed: " + errnoText());
  }
}

void sendAll(int fd, const void *data, size_t size, double deadline,
             const std::string &what) {
  const char *p = static_cast<const char *>(data);
  while (size) {
    waitFor(fd, POLLOUT, deadline, what);
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      throw Error(what + ": send failed: " + errnoText());
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void recvAll(int fd, void *data, size_t size, double deadline,
             const std::string &what) {
  char *p = static_cast<char *>(data);
  while (size) {
    waitFor(fd, POLLIN, deadline, what);
    ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n == 0)
      throw Error(what + ": the peer closed the connection");
    if (n < 0)
      throw Error(what + ": recv failed: " + errnoText());
    p += n;
    size -= static_cast<size_t>(n);
  }
}

/// A message: its length (4 bytes, network order), then its bytes.
void sendMessage(int fd, const std::string &text, double deadline,
                 const std::string &what) {
  uint32_t length = htonl(static_cast<uint32_t>(text.size()));
  sendAll(fd, &length, sizeof(length), deadline, what);
  sendAll(fd, text.data(), text.size(), deadline, what);
}

std::string recvMessage(int fd, double deadline, const std::string &what) {
  uint32_t length = 0;
  recvAll(fd, &length, sizeof(length), deadline, what);
  length = ntohl(length);
  if (length > kMaxMessage)
    throw Error(what + ": not a Tessera rendezvous (message of " +
                std::to_string(length) + " bytes)");
  std::string text(length, '\0');
  recvAll(fd, text.data(), length, deadline, what);
  return text;
}

void closeFd(int &fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

std::string ranksList(const std::vector<int> &ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

} // namespace

std::optional<EnvironmentLaunch> environmentLaunch() {
  // Started by an MPI launcher: MPI_Init finds the world itself.
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (env(name))
      return std::nullopt;
  const char *rankName = nullptr, *sizeName = nullptr;
  if (env("RANK") && env("WORLD_SIZE")) {
    rankName = "RANK";
    sizeName = "WORLD_SIZE";
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS") &&
             env("SLURM_STEP_ID")) {
    // An srun step (a batch script's own shell has SLURM_PROCID 0 and the
    // allocation's SLURM_NTASKS, but is one process, not a rank).
    rankName = "SLURM_PROCID";
    sizeName = "SLURM_NTASKS";
  } else {
    return std::nullopt;
  }
  EnvironmentLaunch launch;
  launch.source = std::string(rankName) + "/" + sizeName;
  launch.size = static_cast<int>(parseInt(sizeName, env(sizeName), 1, 1 << 20));
  launch.rank =
      static_cast<int>(parseInt(rankName, env(rankName), 0, launch.size - 1));
  if (launch.size == 1)
    return std::nullopt;
  launch.masterAddr = env("MASTER_ADDR") ? env("MASTER_ADDR") : "127.0.0.1";
  if (const char *port = env("MASTER_PORT"))
    launch.masterPort =
        static_cast<int>(parseInt("MASTER_PORT", port, 1, 65535));
  if (const char *timeout = env("TESSERA_RENDEZVOUS_TIMEOUT"))
    launch.timeoutSeconds = static_cast<double>(
        parseInt("TESSERA_RENDEZVOUS_TIMEOUT", timeout, 1, 1 << 20));
  return launch;
}

struct Bootstrap::State {
  double deadline = 0;
  std::string where;        ///< "the rendezvous at ADDR:PORT"
  int listenFd = -1;        ///< rank 0
  std::vector<int> peerFds; ///< rank 0: by rank (0 unused)
  int rootFd = -1;          ///< ranks > 0: the connection to rank 0
  pid_t serverPid = -1;     ///< rank 0: ompi-server
  std::string uriFile;      ///< rank 0: where ompi-server writes its address
  std::thread monitor;      ///< watches the connections after the join
  int wake[2] = {-1, -1};   ///< a pipe that stops the monitor

  ~State() {
    stopMonitor();
    closeFd(listenFd);
    closeFd(rootFd);
    for (int &fd : peerFds)
      closeFd(fd);
    stopServer();
  }

  void stopMonitor() {
    if (monitor.joinable()) {
      char byte = 'x';
      ssize_t ignored = ::write(wake[1], &byte, 1);
      (void)ignored;
      monitor.join();
    }
    closeFd(wake[0]);
    closeFd(wake[1]);
  }

  void stopServer() {
    if (serverPid > 0) {
      ::kill(serverPid, SIGTERM);
      int status = 0;
      ::waitpid(serverPid, &status, 0);
      serverPid = -1;
    }
    if (!uriFile.empty())
      ::unlink(uriFile.c_str());
    uriFile.clear();
  }
};

Bootstrap::Bootstrap(EnvironmentLaunch launch)
    : launch(std::move(launch)), state(std::make_unique<State>()) {}

Bootstrap::~Bootstrap() = default;

namespace {

/// Rank 0's listening socket on every interface at `port`.
int listenOn(int port, const std::string &where) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw Error(where + ": socket failed: " + errnoText());
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) ||
      ::listen(fd, 128)) {
    std::string why = errnoText();
    ::close(fd);
    throw Error(where + ": rank 0 cannot listen on port " +
                std::to_string(port) + ": " + why +
                " (choose another MASTER_PORT)");
  }
  return fd;
}

/// A connection to rank 0, retried until the deadline (rank 0 may start
/// later than this rank).
int connectTo(const std::string &host, int port, double deadline,
              const std::string &where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string lastError;
  for (;;) {
    addrinfo *found = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                           &found);
    if (rc)
      lastError =
          std::string("cannot resolve MASTER_ADDR: ") + ::gai_strerror(rc);
    for (addrinfo *a = found; a; a = a->ai_next) {
      int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0)
        continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        ::freeaddrinfo(found);
        return fd;
      }
      lastError = errnoText();
      ::close(fd);
    }
    if (found)
      ::freeaddrinfo(found);
    if (now() >= deadline)
      throw Error(where + ": rank 0 did not answer in time (" + lastError +
                  ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

/// Starts ompi-server, which writes its address to `uriFile`; the child
/// dies with this process (PR_SET_PDEATHSIG), so an aborted job leaves no
/// server behind.
pid_t startServer(const std::string &uriFile, const std::string &where) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0)
    throw Error(where + ": fork failed: " + errnoText());
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
      ::_exit(1);
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
    }
    ::execlp("ompi-server", "ompi-server", "--no-daemonize", "--report-uri",
             uriFile.c_str(), static_cast<char *>(nullptr));
    const char *message = "error: cannot run ompi-server (Open MPI's "
                          "rendezvous server; Debian: openmpi-bin)\n";
    ssize_t ignored = ::write(2, message, std::strlen(message));
    (void)ignored;
    ::_exit(127);
  }
  return pid;
}

} // namespace

void Bootstrap::beforeInit() {
  State &s = *state;
  s.deadline = now() + launch.timeoutSeconds;
  s.where = "the rendezvous of " + launch.source + " at " + launch.masterAddr +
            ":" + std::to_string(launch.masterPort);
  std::string uri;
  if (launch.rank == 0) {
    // Listen first: a port in use fails before anything is started, and
    // ranks that come early wait in the backlog.
    s.listenFd = listenOn(launch.masterPort, s.where);
    char path[] = "/tmp/tessera-ompi-server-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd < 0)
      throw Error(s.where + ": mkstemp failed: " + errnoText());
    ::close(fd);
    s.uriFile = path;
    s.serverPid = startServer(s.uriFile, s.where);
    // The server writes its address once it listens.
    for (;;) {
      std::ifstream in(s.uriFile);
      std::getline(in, uri);
      if (!uri.empty() && !in.eof())
        break;
      uri.clear();
      int status = 0;
      if (::waitpid(s.serverPid, &status, WNOHANG) == s.serverPid) {
        s.serverPid = -1;
        throw Error(
            s.where + ": ompi-server exited (status " +
            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
            ") before reporting its address");
      }
      if (now() >= s.deadline)
        throw Error(s.where + ": ompi-server did not report its address");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Every other rank says hello with its rank and the world size.
    s.peerFds.assign(static_cast<size_t>(launch.size), -1);
    int joined = 1;
    while (joined < launch.size) {
      try {
        waitFor(s.listenFd, POLLIN, s.deadline, s.where);
      } catch (const Error &) {
        std::vector<int> missing;
        for (int r = 1; r < launch.size; ++r)
          if (s.peerFds[static_cast<size_t>(r)] < 0)
            missing.push_back(r);
        throw Error(s.where + ": rank" + (missing.size() > 1 ? "s " : " ") +
                    ranksList(missing) + " of " + std::to_string(launch.size) +
                    " did not connect within " +
                    std::to_string(static_cast<long>(launch.timeoutSeconds)) +
                    " s (TESSERA_RENDEZVOUS_TIMEOUT)");
      }
      int fd = ::accept4(s.listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      std::istringstream hello(recvMessage(fd, s.deadline, s.where));
      std::string word;
      int rank = -1, size = -1;
      hello >> word >> rank >> size;
      std::string problem;
      if (word != kHello)
        problem = "a connection that is not a Tessera rank";
      else if (size != launch.size)
        problem = "rank " + std::to_string(rank) + " says the world has " +
                  std::to_string(size) + " ranks, rank 0 says " +
                  std::to_string(launch.size);
      else if (rank < 1 || rank >= launch.size)
        problem = "a rank " + std::to_string(rank) + " outside the world";
      else if (s.peerFds[static_cast<size_t>(rank)] >= 0)
        problem = "two processes with rank " + std::to_string(rank);
      if (!problem.empty()) {
        try {
          sendMessage(fd, "error: " + problem, now() + 1, s.where);
        } catch (const Error &) {
        }
        ::close(fd);
        throw Error(s.where + ": " + problem);
      }
      s.peerFds[static_cast<size_t>(rank)] = fd;
      ++joined;
    }
    closeFd(s.listenFd);
    for (int r = 1; r < launch.size; ++r)
      sendMessage(s.peerFds[static_cast<size_t>(r)], "uri " + uri, s.deadline,
                  s.where);
  } else {
    s.rootFd =
        connectTo(launch.masterAddr, launch.masterPort, s.deadline, s.where);
    sendMessage(s.rootFd,
                std::string(kHello) + " " + std::to_string(launch.rank) + " " +
                    std::to_string(launch.size),
                s.deadline, s.where);
    std::string answer = recvMessage(s.rootFd, s.deadline, s.where);
    if (answer.rfind("error: ", 0) == 0)
      throw Error(s.where + ": rank 0 refused this rank: " + answer.substr(7));
    if (answer.rfind("uri ", 0) != 0)
      throw Error(s.where + ": not a Tessera rendezvous");
    uri = answer.substr(4);
  }
  // Open MPI reads its MCA parameters from the environment at MPI_Init.
  ::setenv("OMPI_MCA_pmix_server_uri", uri.c_str(), 1);
}

MPI_Comm Bootstrap::joinWorld() {
  State &s = *state;
  check(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler(MPI_COMM_SELF)");
  // Ranks join in rank order; a rank that has joined takes part in every
  // later accept, so the merged communicator grows 0, 1, ..., size-1 (the
  // low group of each merge is the one already there).
  char port[MPI_MAX_PORT_NAME] = {};
  MPI_Comm comm = MPI_COMM_SELF;
  auto grow = [&](MPI_Comm inter, bool high) {
    MPI_Comm merged = MPI_COMM_NULL;
    check(MPI_Intercomm_merge(inter, high ? 1 : 0, &merged),
          "MPI_Intercomm_merge");
    check(MPI_Comm_free(&inter), "MPI_Comm_free");
    if (comm != MPI_COMM_SELF)
      check(MPI_Comm_free(&comm), "MPI_Comm_free");
    comm = merged;
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
          "MPI_Comm_set_errhandler");
  };
  int first = launch.rank + 1;
  if (launch.rank == 0) {
    check(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
  } else {
    std::string name = recvMessage(s.rootFd, s.deadline, s.where);
    if (name.size() >= sizeof(port))
      throw Error(s.where + ": MPI port name too long");
    std::copy(name.begin(), name.end(), port);
    MPI_Comm inter = MPI_COMM_NULL;
    check(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter),
          "MPI_Comm_connect (" + s.where + ")");
    grow(inter, true);
  }
  for (int joining = first; joining < launch.size; ++joining) {
    if (launch.rank == 0)
      sendMessage(s.peerFds[static_cast<size_t>(joining)], port, s.deadline,
                  s.where);
    MPI_Comm inter = MPI_COMM_NULL;
    check(MPI_Comm_accept(port, MPI_INFO_NULL, 0, comm, &inter),
          "MPI_Comm_accept (" + s.where + ", rank " + std::to_string(joining) +
              ")");
    grow(inter, false);
  }
  if (launch.rank == 0)
    check(MPI_Close_port(port), "MPI_Close_port");
  int rank = -1, size = -1;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (rank != launch.rank || size != launch.size)
    throw Error(s.where + ": the joined world has this process as rank " +
                std::to_string(rank) + " of " + std::to_string(size) +
                ", not " + std::to_string(launch.rank) + " of " +
                std::to_string(launch.size));
  startMonitor();
  return comm;
}

namespace {

/// Watches the rendezvous connections (rank 0: one per rank; other ranks:
/// the one to rank 0) until `wake` is readable. A connection that closes
/// without the finishing byte means its process ended without finishing
/// the job (an error, a kill, a lost host): this rank ends too, at once.
/// mpirun does this for the ranks it starts; without it, ranks started by
/// hand would wait for the dead one until --comm-timeout. Rank 0 ending
/// closes every connection, so one death ends the whole job. No MPI call
/// is made here (MPI is not initialised for threads).
void watchPeers(int rank, std::vector<std::pair<int, int>> peers, int wake) {
  std::vector<pollfd> fds;
  fds.push_back({wake, POLLIN, 0});
  for (auto [peer, fd] : peers)
    fds.push_back({fd, POLLIN, 0});
  for (;;) {
    int rc = ::poll(fds.data(), fds.size(), -1);
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0 || fds[0].revents)
      return;
    // Every peer found gone in this round, not only the first in order: a
    // killed rank's neighbours may end within moments of it (their writes
    // to it fail), and a lower rank's descriptor is not the first closed.
    std::vector<int> ended;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !fds[i].revents)
        continue;
      char byte = 0;
      ssize_t n = ::recv(fds[i].fd, &byte, 1, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n == 1 && byte == kFinishing) {
        fds[i].fd = -1; // poll skips negative descriptors
        continue;
      }
      ended.push_back(peers[i - 1].first);
    }
    if (ended.empty())
      continue;
    std::string who = ended.size() == 1 ? "rank " : "ranks ";
    for (size_t k = 0; k < ended.size(); ++k)
      who += (k == 0                  ? ""
              : k + 1 == ended.size() ? " and "
                                      : ", ") +
             std::to_string(ended[k]);
    std::string line = "error: rank " + std::to_string(rank) + ": " + who +
                       " ended without finishing the job (it failed, was "
                       "killed or lost its connection); ending this rank\n";
    ssize_t ignored = ::write(2, line.data(), line.size());
    (void)ignored;
    ::_exit(1);
  }
}

} // namespace

void Bootstrap::startMonitor() {
  State &s = *state;
  std::vector<std::pair<int, int>> peers;
  if (launch.rank == 0) {
    for (int r = 1; r < launch.size; ++r)
      peers.push_back({r, s.peerFds[static_cast<size_t>(r)]});
  } else {
    peers.push_back({0, s.rootFd});
  }
  if (::pipe2(s.wake, O_CLOEXEC))
    throw Error(s.where + ": pipe failed: " + errnoText());
  s.monitor = std::thread(watchPeers, launch.rank, std::move(peers), s.wake[0]);
}

void Bootstrap::beforeFinalize() {
  State &s = *state;
  s.stopMonitor();
  // Tell the peers that this rank finishes; a failed send only means the
  // peer is gone already.
  char byte = kFinishing;
  for (int fd : s.peerFds)
    if (fd >= 0)
      (void)::send(fd, &byte, 1, MSG_NOSIGNAL);
  if (s.rootFd >= 0)
    (void)::send(s.rootFd, &byte, 1, MSG_NOSIGNAL);
  closeFd(s.rootFd);
  for (int &fd : s.peerFds)
    closeFd(fd);
}

void Bootstrap::afterFinalize() { state->stopServer(); }

} // namespace mpi
} // namespace rt
} // namespace tessera
