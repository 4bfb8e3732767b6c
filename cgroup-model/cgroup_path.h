// CgroupPath: a cgroup's place inside one hierarchy, as validated components.
//
// Every component is checked before any path is built from it: no "/", no
// "." or "..", no control characters, at most 255 bytes (the kernel's
// NAME_MAX), never empty. So a pod UID like "../../etc" can never turn into a
// path outside the tree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace vri {

Result<void> validateCgroupComponent(std::string_view component);

class CgroupPath {
 public:
  CgroupPath() = default;  // the root of a hierarchy

  // "a/b/c" (leading and trailing "/" allowed, empty components refused).
  static Result<CgroupPath> parse(std::string_view text);
  static Result<CgroupPath> of(std::vector<std::string> components);

  Result<CgroupPath> child(std::string_view component) const;
  CgroupPath parent() const;  // the root's parent is the root
  bool isRoot() const { return components_.empty(); }
  size_t depth() const { return components_.size(); }
  const std::vector<std::string>& components() const { return components_; }
  const std::string& leaf() const { return components_.back(); }
  bool isWithin(const CgroupPath& ancestor) const;  // true for the path itself too

  std::string str() const;  // "a/b/c"; "" for the root

  friend bool operator==(const CgroupPath&, const CgroupPath&) = default;
  friend auto operator<=>(const CgroupPath& a, const CgroupPath& b) { return a.components_ <=> b.components_; }

 private:
  explicit CgroupPath(std::vector<std::string> components) : components_(std::move(components)) {}
  std::vector<std::string> components_;
};

}  // namespace vri
