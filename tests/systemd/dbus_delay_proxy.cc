// vri-test-dbus-delay: a unix-socket proxy in front of the system bus that holds what its clients
// send for a while before passing it on, so that systemd answers a program pointed at it (through
// DBUS_SYSTEM_BUS_ADDRESS) late. The delay, in milliseconds, is read from --delay-file for each chunk
// a client sends (absent or empty: none), so a test slows the bus and speeds it up again while its
// clients stay connected. What the bus sends comes back at once, and everything keeps its order.
// D-Bus's EXTERNAL authentication passes through: the bus sees the proxy's credentials (run it as
// the user its clients run as), and no file descriptors are passed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Held {
  Clock::time_point due;
  std::string bytes;
};

// One client and its own connection to the bus.
struct Pair {
  int client = -1;
  int bus = -1;
  std::deque<Held> toBus;  // in the order sent
  ~Pair() {
    if (client >= 0) ::close(client);
    if (bus >= 0) ::close(bus);
  }
};

std::chrono::milliseconds delayFrom(const std::string& file) {
  std::ifstream in(file);
  long ms = 0;
  if (in >> ms && ms > 0) return std::chrono::milliseconds(ms);
  return std::chrono::milliseconds(0);
}

int connectTo(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

int listenAt(const std::string& path) {
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 16) != 0)
    return -1;
  return fd;
}

bool writeAll(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads what `from` has; false at its end or on an error.
bool readSome(int from, std::string* bytes) {
  char buffer[65536];
  const ssize_t n = ::read(from, buffer, sizeof buffer);
  if (n <= 0) return false;
  bytes->assign(buffer, static_cast<size_t>(n));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen, bus = "/run/dbus/system_bus_socket", delayFile;
  CLI::App app{"A unix-socket proxy that delays what its clients send to the system bus"};
  app.add_option("--listen", listen, "the socket its clients connect to")->required();
  app.add_option("--bus", bus, "the bus's socket")->capture_default_str();
  app.add_option("--delay-file", delayFile, "holds the delay in milliseconds, read for every chunk")->required();
  CLI11_PARSE(app, argc, argv);
  ::signal(SIGPIPE, SIG_IGN);

  const int listener = listenAt(listen);
  if (listener < 0) {
    std::fprintf(stderr, "vri-test-dbus-delay: cannot listen at %s: %s\n", listen.c_str(), std::strerror(errno));
    return 1;
  }
  std::fprintf(stderr, "vri-test-dbus-delay: %s -> %s, delay from %s\n", listen.c_str(), bus.c_str(),
               delayFile.c_str());
  std::vector<std::unique_ptr<Pair>> pairs;
  for (;;) {
    // Wake for the next chunk due, or for what either side sends.
    int timeout = -1;
    const Clock::time_point now = Clock::now();
    for (const auto& p : pairs) {
      if (p->toBus.empty()) continue;
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(p->toBus.front().due - now).count();
      const int ms = wait < 0 ? 0 : static_cast<int>(wait);
      timeout = timeout < 0 ? ms : std::min(timeout, ms);
    }
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (const auto& p : pairs) {
      fds.push_back({p->client, POLLIN, 0});
      fds.push_back({p->bus, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return 1;

    if (fds[0].revents & POLLIN) {
      auto p = std::make_unique<Pair>();
      p->client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      p->bus = connectTo(bus);
      if (p->client >= 0 && p->bus >= 0) {
        std::fprintf(stderr, "vri-test-dbus-delay: a client connected\n");
        pairs.push_back(std::move(p));
      }
      continue;  // the poll set changed
    }
    std::vector<bool> closed(pairs.size(), false);
    for (size_t i = 0; i < pairs.size(); ++i) {
      Pair& p = *pairs[i];
      const short fromClient = fds[1 + 2 * i].revents, fromBus = fds[2 + 2 * i].revents;
      std::string bytes;
      if (fromClient & (POLLIN | POLLHUP | POLLERR)) {
        if (readSome(p.client, &bytes))
          p.toBus.push_back({Clock::now() + delayFrom(delayFile), std::move(bytes)});
        else
          closed[i] = true;
      }
      if (fromBus & (POLLIN | POLLHUP | POLLERR)) {
        if (!readSome(p.bus, &bytes) || !writeAll(p.client, bytes)) closed[i] = true;
      }
      while (!closed[i] && !p.toBus.empty() && p.toBus.front().due <= Clock::now()) {
        if (!writeAll(p.bus, p.toBus.front().bytes)) closed[i] = true;
        p.toBus.pop_front();
      }
    }
    for (size_t i = pairs.size(); i-- > 0;) {
      if (closed[i]) pairs.erase(pairs.begin() + static_cast<long>(i));
    }
  }
}
