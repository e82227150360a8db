// Temporary file creation with O_EXCL (so the umask gives the usual permissions), then rename.
#include "staged_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "errors.hpp"

namespace tally_cli {
namespace {

/// Opens a fresh file beside `target`; its name is returned in `temp`.
int create_beside(const std::string& target, std::string& temp) {
  const std::filesystem::path t(target);
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = (t.parent_path() / ("." + t.filename().string() + ".tmp-" + std::to_string(::getpid()) +
                               "-" + std::to_string(attempt)))
               .string();
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

staged_file::staged_file(std::string target, const std::string& bytes)
    : target_(std::move(target)) {
  // Checked here, not left to the rename: by commit time another output may be in place.
  std::error_code ec;
  if (std::filesystem::is_directory(target_, ec))
    throw failure("cannot write " + target_ + ": it is a directory");
  const int fd = create_beside(target_, temp_);
  if (fd < 0) throw failure("cannot write " + target_ + ": " + std::strerror(errno));
  int err = 0;
  for (std::size_t done = 0; done < bytes.size() && err == 0;) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (n == 0 || errno != EINTR)
      err = n == 0 ? EIO : errno;
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    std::remove(temp_.c_str());
    throw failure("cannot write " + target_ + ": " + std::strerror(err));
  }
}

staged_file::~staged_file() {
  if (!committed_) std::remove(temp_.c_str());
}

void staged_file::commit() {
  if (std::rename(temp_.c_str(), target_.c_str()) != 0)
    throw failure("cannot write " + target_ + ": " + std::strerror(errno));
  committed_ = true;
}

}  // namespace tally_cli
