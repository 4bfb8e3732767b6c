// Runs a program with text on its stdin and collects its exit code, stdout
// and stderr (through files in `scratch`, so neither side can block the
// other). posix_spawn keeps the cost of starting it out of timings.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace vri::testing {

struct ChildResult {
  int exitCode = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `env`: "NAME=value" entries added to this process's environment.
inline ChildResult runChild(const std::vector<std::string>& argv, const std::string& input, const std::string& scratch,
                            const std::vector<std::string>& env = {}) {
  ::signal(SIGPIPE, SIG_IGN);  // a child that exits without reading its stdin must not kill the caller
  int in_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return {};
  const std::string out_path = scratch + "/child.out", err_path = scratch + "/child.err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ChildResult result;
  if (spawned != 0) {
    ::close(in_pipe[1]);
    result.err = "cannot run " + argv[0];
    return result;
  }
  for (size_t done = 0; done < input.size();) {
    const ssize_t n = ::write(in_pipe[1], input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EPIPE: the child stopped reading
    done += static_cast<size_t>(n);
  }
  ::close(in_pipe[1]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

}  // namespace vri::testing
