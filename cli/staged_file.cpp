// Temporary file creation with O_EXCL (so the umask gives the usual permissions), then rename;
// temporary files removed on SIGINT, SIGTERM and SIGHUP.
#include "staged_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "errors.hpp"

namespace tally_cli {
namespace {

// The temporary files now being written, for the signal handler: fixed slots of plain bytes
// (a handler may only read memory and call async-signal-safe functions such as unlink).
constexpr int kSlots = 8;
constexpr std::size_t kPathBytes = 4096;
char pending[kSlots][kPathBytes];
volatile std::sig_atomic_t pending_used[kSlots];

extern "C" void remove_pending_and_die(int signal) {
  for (int i = 0; i < kSlots; ++i)
    if (pending_used[i]) ::unlink(pending[i]);
  std::signal(signal, SIG_DFL);  // then end as that signal would have
  std::raise(signal);
}

/// Registers `path` for removal on a signal; returns its slot, or -1 (no room: not covered).
int hold(const std::string& path) {
  static const bool installed = [] {
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) std::signal(signal, remove_pending_and_die);
    return true;
  }();
  (void)installed;
  if (path.size() >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    if (pending_used[i]) continue;
    std::memcpy(pending[i], path.c_str(), path.size() + 1);
    pending_used[i] = 1;
    return i;
  }
  return -1;
}

void release(int slot) {
  if (slot >= 0) pending_used[slot] = 0;
}

/// The file a target names: through a symlink (chains too) to the file it points at, so the
/// link is kept; other paths as they are.
std::string resolved(const std::string& target) {
  std::error_code ec;
  std::filesystem::path p(target);
  for (int hops = 0; hops < 40 && std::filesystem::is_symlink(p, ec); ++hops) {
    const std::filesystem::path to = std::filesystem::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p.string();
}

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

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

staged_file::staged_file(std::string target, const std::string& bytes)
    : target_(resolved(target)), named_(std::move(target)) {
  // Checked here, not left to the rename: by commit time another output may be in place.
  std::error_code ec;
  if (std::filesystem::is_directory(target_, ec))
    throw failure("cannot write " + named_ + ": it is a directory");
  const int fd = create_beside(target_, temp_);
  if (fd < 0) throw failure("cannot write " + named_ + ": " + std::strerror(errno));
  slot_ = hold(temp_);
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
    release(slot_);
    throw failure("cannot write " + named_ + ": " + std::strerror(err));
  }
}

staged_file::~staged_file() {
  if (!committed_) std::remove(temp_.c_str());
  release(slot_);
}

void staged_file::commit() {
  if (std::rename(temp_.c_str(), target_.c_str()) != 0)
    throw failure("cannot write " + named_ + ": " + std::strerror(errno));
  committed_ = true;
  release(slot_);
}

}  // namespace tally_cli
