#include "vrictl/shell.h"

#include <histedit.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace vri::ctl {

namespace {

// Set by SIGINT while a command runs (a signal handler can reach nothing else): ends `events --follow`.
std::atomic<bool> interruptedByUser{false};

extern "C" void onInterrupt(int) { interruptedByUser = true; }

// SIGINT ends the running command, not the shell, while this lives.
class InterruptScope {
 public:
  InterruptScope() {
    interruptedByUser = false;
    struct sigaction action {};
    action.sa_handler = &onInterrupt;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptScope() { ::sigaction(SIGINT, &previous_, nullptr); }

 private:
  struct sigaction previous_ {};
};

// One line of the shell: returns false for quit/exit.
bool runLine(const std::string& line, CommandContext& context, int& lastExit) {
  std::vector<std::string> words = splitWords(line);
  if (words.empty()) return true;
  if (words[0] == "quit" || words[0] == "exit") return false;
  if (words[0] == "help") {
    words.erase(words.begin());
    words.push_back("--help");
  }
  InterruptScope interrupts;
  context.interrupted = [] { return interruptedByUser.load(); };
  lastExit = runShellCommand(words, context);
  context.out.flush();
  return true;
}

struct EditorState {
  const CompletionSource* completion = nullptr;
  FILE* out = nullptr;
};

char* prompt(EditLine*) {
  static char text[] = "vrictl # ";  // libedit wants a char*; never written
  return text;
}

unsigned char complete(EditLine* editor, int) {
  void* data = nullptr;
  el_get(editor, EL_CLIENTDATA, &data);
  const auto* state = static_cast<const EditorState*>(data);
  const LineInfo* line = el_line(editor);
  const std::string before(line->buffer, static_cast<size_t>(line->cursor - line->buffer));
  const std::vector<std::string> candidates = completionsFor(before, *state->completion);
  if (candidates.empty()) return CC_ERROR;
  const std::vector<std::string> words = splitWords(before);
  const bool new_word = before.empty() || before.back() == ' ';
  const std::string partial = new_word || words.empty() ? "" : words.back();
  const std::string prefix = commonPrefix(candidates);
  if (candidates.size() == 1) {
    el_insertstr(editor, (candidates.front().substr(partial.size()) + " ").c_str());
    return CC_REFRESH;
  }
  if (prefix.size() > partial.size()) {
    el_insertstr(editor, prefix.substr(partial.size()).c_str());
    return CC_REFRESH;
  }
  std::fputs("\n", state->out);
  for (const std::string& c : candidates) std::fprintf(state->out, "%s  ", c.c_str());
  std::fputs("\n", state->out);
  return CC_REDISPLAY;
}

// Returns 0: a session ends well however its last command did (a pipe's gives that command's code).
int runEditor(CommandContext& context, const CompletionSource& completion, const std::string& historyPath) {
  EditorState state{&completion, stdout};
  EditLine* editor = el_init("vrictl", stdin, stdout, stderr);
  History* history = history_init();
  HistEvent event;
  ::history(history, &event, H_SETSIZE, 1000);
  ::history(history, &event, H_SETUNIQUE, 1);
  if (!historyPath.empty()) ::history(history, &event, H_LOAD, historyPath.c_str());
  el_set(editor, EL_CLIENTDATA, &state);
  el_set(editor, EL_PROMPT, &prompt);
  el_set(editor, EL_EDITOR, "emacs");
  el_set(editor, EL_SIGNAL, 1);
  el_set(editor, EL_HIST, ::history, history);
  // The wide call: the narrow one copies name and help into wide strings that libedit never frees.
  el_wset(editor, EL_ADDFN, L"vrictl-complete", L"complete commands, flags and names", &complete);
  el_set(editor, EL_BIND, "^I", "vrictl-complete", nullptr);
  el_source(editor, nullptr);  // the user's ~/.editrc

  std::fputs(
      "Welcome to vrictl, the VRI node resource manager's shell.\n"
      "Type 'help' for the commands, TAB to complete, 'quit' to leave.\n\n",
      stdout);
  int last_exit = kExitOk;  // what `help` and the commands returned; the session's own is 0
  while (true) {
    int length = 0;
    const char* read = el_gets(editor, &length);
    if (read == nullptr || length == 0) {
      std::fputs("\n", stdout);
      break;
    }
    std::string line(read, static_cast<size_t>(length));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    ::history(history, &event, H_ENTER, line.c_str());
    std::fflush(stdout);
    if (!runLine(line, context, last_exit)) break;
  }
  if (!historyPath.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(historyPath).parent_path(), ec);
    if (::history(history, &event, H_SAVE, historyPath.c_str()) < 0) {
      context.err << "vrictl: could not keep the history in " << historyPath << "\n";
    }
  }
  history_end(history);
  el_end(editor);
  return kExitOk;
}

}  // namespace

std::string defaultHistoryPath() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/') {
    return std::string(state) + "/vrictl/history";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.local/state/vrictl/history";
  }
  return "";
}

int runShell(CommandContext& context, const CompletionSource& completion, const std::string& historyPath) {
  if (::isatty(STDIN_FILENO) == 1) return runEditor(context, completion, historyPath);
  // Commands from a pipe or a file, one per line.
  int last_exit = kExitOk;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!runLine(line, context, last_exit)) break;
  }
  return last_exit;
}

}  // namespace vri::ctl
