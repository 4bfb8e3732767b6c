#include "cgroup-model/owned_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace vri {

namespace {

std::string modeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

Result<void> refuseWritableByOthers(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::fromErrno(errno, what + ": stat " + path);
  const std::string refuse = what + ": " + path + " ";
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return Error::failedPrecondition(refuse + "belongs to uid " + std::to_string(st.st_uid) +
                                     ", who could change it; it must belong to root");
  if ((st.st_mode & S_IWOTH) != 0)
    return Error::failedPrecondition(refuse + "may be written by everyone (mode " + modeText(st.st_mode) +
                                     "); take that away (chmod o-w)");
  if ((st.st_mode & S_IWGRP) != 0 && st.st_gid != 0)
    return Error::failedPrecondition(refuse + "may be written by group " + std::to_string(st.st_gid) + " (mode " +
                                     modeText(st.st_mode) + "); take that away (chmod g-w)");
  return {};
}

namespace {

std::string directoryOf(const std::string& path) {
  const std::string directory = std::filesystem::path(path).parent_path();
  return directory.empty() ? "." : directory;
}

}  // namespace

Result<void> refuseFileWritableByOthers(const std::string& path, const std::string& what) {
  VRI_TRY(refuseWritableByOthers(path, what));
  return refuseWritableByOthers(directoryOf(path), what + "'s directory");
}

Result<void> refuseDirectoryOfWritableByOthers(const std::string& path, const std::string& what) {
  const std::string directory = directoryOf(path);
  if (std::error_code ec; !std::filesystem::exists(directory, ec)) return {};
  return refuseWritableByOthers(directory, what);
}

}  // namespace vri
