// Temporary file creation with O_EXCL (so the umask gives the usual permissions), then rename;
// temporary files removed on SIGINT, SIGTERM and SIGHUP; devices and FIFOs written in place.
#include "staged_file.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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

/// Writes all of `bytes` to `fd` and closes it; returns 0, or the errno of the first failure.
/// SIGPIPE and SIGXFSZ are held back meanwhile, so that a FIFO whose reader has gone (EPIPE) and
/// a file past the process' size limit (EFBIG, ulimit -f) are errors reported like any other,
/// not the end of the process.
int write_and_close(int fd, const std::string& bytes) {
  sigset_t held, before;
  sigemptyset(&held);
  sigaddset(&held, SIGPIPE);
  sigaddset(&held, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &held, &before);
  int err = 0;
  for (std::size_t done = 0; done < bytes.size() && err == 0;) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (n == 0 || errno != EINTR)
      err = n == 0 ? EIO : errno;
  }
  const int raised = err == EPIPE ? SIGPIPE : err == EFBIG ? SIGXFSZ : 0;
  if (raised && !sigismember(&before, raised)) {
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, raised);
    const timespec now{0, 0};
    sigtimedwait(&one, nullptr, &now);  // the signal that write raised, taken back
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

/// What a file of this mode is, in words, for a refusal.
const char* kind_of(mode_t mode) {
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  return "neither a regular file, a character device nor a FIFO";
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

staged_file::staged_file(std::string target, std::string bytes)
    : target_(resolved(target)), named_(std::move(target)) {
  // Checked here, not left to the rename: by commit time another output may be in place. stat
  // follows symlinks (and /proc's links such as /dev/stdout) to what the name leads to. A name
  // that leads nowhere (a new path, or a dangling symlink) is created: through a dangling link,
  // the file it names, as `sort -o` and the shell's `>` do.
  struct stat st {};
  if (::stat(named_.c_str(), &st) != 0) {
    const int err = errno;
    if (err != ENOENT) throw failure("cannot write " + named_ + ": " + std::strerror(err));
    stage(bytes);
    return;
  }
  if (S_ISREG(st.st_mode)) {
    stage(bytes);
    return;
  }
  if (S_ISDIR(st.st_mode)) throw failure("cannot write " + named_ + ": it is a directory");
  if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw failure("cannot write " + named_ + ": it is " + kind_of(st.st_mode) +
                  "; tally writes regular files, character devices and FIFOs");
  // A device or FIFO is written in place at commit. O_NONBLOCK: a FIFO that no process reads
  // fails at once (ENXIO) rather than waiting for a reader; writes block as usual after.
  fd_ = ::open(named_.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    throw failure("cannot write " + named_ + ": " +
                  (err == ENXIO && S_ISFIFO(st.st_mode) ? "a FIFO that no process is reading"
                                                        : std::strerror(err)));
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags == -1 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) == -1) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw failure("cannot write " + named_ + ": " + std::strerror(err));
  }
  bytes_ = std::move(bytes);
}

void staged_file::stage(const std::string& bytes) {
  const int fd = create_beside(target_, temp_);
  if (fd < 0) throw failure("cannot write " + named_ + ": " + std::strerror(errno));
  slot_ = hold(temp_);
  const int err = write_and_close(fd, bytes);
  if (err != 0) {
    std::remove(temp_.c_str());
    release(slot_);
    throw failure("cannot write " + named_ + ": " + std::strerror(err));
  }
}

staged_file::~staged_file() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) std::remove(temp_.c_str());
  release(slot_);
}

void staged_file::commit() {
  if (fd_ >= 0) {
    const int err = write_and_close(fd_, bytes_);
    fd_ = -1;
    if (err != 0) throw failure("cannot write " + named_ + ": " + std::strerror(err));
  } else if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
    throw failure("cannot write " + named_ + ": " + std::strerror(errno));
  }
  committed_ = true;
  release(slot_);
}

}  // namespace tally_cli
