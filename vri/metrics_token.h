// The bearer token a scrape of the metrics endpoint must send (metrics_server.h), read once at
// start from metrics_token_file: a file only root (or vrid's user) may change and everyone else
// may not read (its group may: give it the scraper's group). One line of 16 to 4096 visible
// ASCII characters; a trailing newline is not part of it.
#pragma once

#include <string>

#include "base/result.h"

namespace vri {

Result<std::string> readMetricsToken(const std::string& path);

}  // namespace vri
