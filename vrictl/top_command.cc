#include "vrictl/top_command.h"
#include "vrictl/printable.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <mutex>
#include <ostream>

#include "vrictl/report_views.h"
#include "vrictl/top_view.h"

namespace vri::ctl {

namespace {

// The terminal in non-canonical mode without echo or signals (Ctrl-C arrives as a key) on the
// alternate screen, given back as it was however the command ends.
class LiveTerminal {
 public:
  LiveTerminal(int input, int output) : input_(input), output_(output) {
    saved_ = ::tcgetattr(input_, &before_) == 0;
    if (saved_) {
      termios raw = before_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      ::tcsetattr(input_, TCSANOW, &raw);
    }
    write("\033[?1049h\033[?25l");  // the alternate screen, no cursor
  }
  ~LiveTerminal() {
    write("\033[?25h\033[?1049l");
    if (saved_) ::tcsetattr(input_, TCSANOW, &before_);
  }
  LiveTerminal(const LiveTerminal&) = delete;
  LiveTerminal& operator=(const LiveTerminal&) = delete;

  void write(std::string_view text) const {
    while (!text.empty()) {
      const ssize_t n = ::write(output_, text.data(), text.size());
      if (n <= 0) return;
      text.remove_prefix(static_cast<size_t>(n));
    }
  }
  // The keys typed since the last call, without waiting.
  std::string keys() const {
    std::string typed;
    pollfd fd{input_, POLLIN, 0};
    while (::poll(&fd, 1, 0) == 1 && (fd.revents & POLLIN)) {
      char buffer[64];
      const ssize_t n = ::read(input_, buffer, sizeof buffer);
      if (n <= 0) break;
      typed.append(buffer, static_cast<size_t>(n));
    }
    return typed;
  }
  int height() const {
    winsize size{};
    return ::ioctl(output_, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 ? size.ws_row : 24;
  }

 private:
  int input_, output_;
  termios before_{};
  bool saved_ = false;
};

int live(CommandContext& c, TopSort sort, int input, int output) {
  auto first = c.vrid().usage(0);
  if (!first.ok()) return reportFailure(c, first.error());
  LiveTerminal terminal(input, output);
  std::mutex mutex;  // the stream's thread draws rounds, the key poller redraws on a new order
  v1::UsageReport last = *first;
  v1::Node node;
  const auto draw = [&] {
    TopScreen screen;
    screen.sort = sort;
    screen.keys = true;
    const int cpu_lines = last.samples().empty() ? 0 : (last.samples(0).cpus_size() + 7) / 8 + 1;
    screen.rows = std::max(1, terminal.height() - 5 - cpu_lines);
    std::string text = formatTop(printable(last), printable(node), screen, c.style);
    // The terminal's output processing is left on: "\n" still starts the next line at column 0.
    terminal.write("\033[H\033[2J" + text);
  };
  {
    auto n = c.vrid().node();
    if (n.ok()) node = *n;
    std::lock_guard lock(mutex);
    draw();
  }
  bool quit = false;
  auto watched = c.vrid().watchUsage(
      [&](const v1::UsageReport& report) {
        auto n = c.vrid().node();
        std::lock_guard lock(mutex);
        if (n.ok()) node = *n;
        last = report;
        draw();
        return !quit;
      },
      [&] {
        for (char key : terminal.keys()) {
          if (key == 'q' || key == 3 /* Ctrl-C */) {
            quit = true;
          } else if (const auto chosen = topSortForKey(key)) {
            std::lock_guard lock(mutex);
            sort = *chosen;
            draw();
          }
        }
        return quit || c.interrupted();
      });
  if (!watched.ok()) return reportFailure(c, watched.error());
  return kExitOk;
}

}  // namespace

int runTop(CommandContext& c, const TopChoices& o) {
  const auto sort = parseTopSort(o.sort);
  if (!sort) {
    c.err << "vrictl: top --sort takes cpu, memory, throttled or name\n";
    return kExitUsage;
  }
  if (!o.once && !o.json && !c.inShell && ::isatty(o.input) && ::isatty(o.output))
    return live(c, *sort, o.input, o.output);
  auto report = c.vrid().usage(0);
  if (!report.ok()) return reportFailure(c, report.error());
  if (o.json) {
    c.out << toJson(*report) << "\n";
    return kExitOk;
  }
  auto node = c.vrid().node();
  if (!node.ok()) return reportFailure(c, node.error());
  TopScreen screen;
  screen.sort = *sort;
  c.out << formatTop(printable(*report), printable(*node), screen, c.style);
  return kExitOk;
}

}  // namespace vri::ctl
