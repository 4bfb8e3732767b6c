#include "vrictl/completion.h"

#include <algorithm>
#include <cctype>

namespace vri::ctl {

std::vector<std::string> splitWords(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char ch : line) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        word += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

std::vector<std::string> completionsFor(const std::string& line, const CompletionSource& source) {
  std::vector<std::string> words = splitWords(line);
  const bool new_word = line.empty() || std::isspace(static_cast<unsigned char>(line.back()));
  const std::string partial = new_word || words.empty() ? "" : words.back();
  if (!new_word && !words.empty()) words.pop_back();
  std::vector<std::string> candidates;
  if (words.empty()) {
    for (const CommandSummary& c : source.commands) candidates.push_back(c.name);
    if (source.shellWords)
      for (const char* word : {"help", "quit", "exit"}) candidates.push_back(word);
  } else if (words.front() == "help") {
    if (words.size() == 1)
      for (const CommandSummary& c : source.commands) candidates.push_back(c.name);
  } else {
    const auto command = std::find_if(source.commands.begin(), source.commands.end(),
                                      [&](const CommandSummary& c) { return c.name == words.front(); });
    if (command == source.commands.end()) return {};
    if (partial.starts_with("-")) {
      candidates = command->flags;
    } else {
      // The one argument a command takes, when not given yet.
      const bool argument_given =
          std::any_of(words.begin() + 1, words.end(), [](const std::string& w) { return !w.starts_with("-"); });
      if (!argument_given && command->argument == CommandSummary::Argument::kVm && source.vms)
        candidates = source.vms();
      if (!argument_given && command->argument == CommandSummary::Argument::kPod && source.pods)
        candidates = source.pods();
      if (candidates.empty()) candidates = command->flags;
    }
  }
  std::erase_if(candidates, [&](const std::string& c) { return !c.starts_with(partial); });
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  return candidates;
}

std::string withoutProgramOptions(const std::string& line, const std::map<std::string, bool>& programOptions) {
  const std::vector<std::string> words = splitWords(line);
  size_t first = 0;  // the first word that is not a program option
  while (first < words.size()) {
    const std::string& w = words[first];
    const auto option = programOptions.find(w.substr(0, w.find('=')));
    if (option == programOptions.end()) break;
    // A value follows the option's word unless it came after '='.
    first += option->second && w.find('=') == std::string::npos ? 2 : 1;
  }
  if (first == 0) return line;
  std::string out;
  for (size_t i = first; i < words.size(); ++i) out += (out.empty() ? "" : " ") + words[i];
  const bool newWord = line.empty() || std::isspace(static_cast<unsigned char>(line.back()));
  if (newWord && !out.empty()) out += " ";
  return out;
}

std::string commonPrefix(const std::vector<std::string>& words) {
  if (words.empty()) return "";
  std::string prefix = words.front();
  for (const std::string& w : words) {
    size_t n = 0;
    while (n < prefix.size() && n < w.size() && prefix[n] == w[n]) ++n;
    prefix.resize(n);
  }
  return prefix;
}

}  // namespace vri::ctl
