// vrictl top's screen: one usage round as a table of tenants (CPU use, throttling, memory, the CPUs
// each holds), sorted, under a header with each CPU's busy share. Pure text, so that tests and the
// benchmark format exactly what the terminal shows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "proto/vri.pb.h"
#include "vrictl/terminal_style.h"

namespace vri::ctl {

enum class TopSort { kCpu, kMemory, kThrottled, kName };
// "cpu" | "memory" | "throttled" | "name"; nullopt for anything else.
std::optional<TopSort> parseTopSort(std::string_view text);
std::string_view topSortName(TopSort sort);
// The key that chooses it on the live screen ('c', 'm', 't', 'n'); nullopt for other keys.
std::optional<TopSort> topSortForKey(char key);

struct TopScreen {
  TopSort sort = TopSort::kCpu;
  int rows = 0;       // tenant rows at most; 0: every tenant
  bool keys = false;  // the live screen: the header names the keys
};

// `sample` is the report's latest; `node` gives each tenant's exclusive CPUs.
std::string formatTop(const v1::UsageReport& report, const v1::Node& node, const TopScreen& screen,
                      const TerminalStyle& style);

}  // namespace vri::ctl
