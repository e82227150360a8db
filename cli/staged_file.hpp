// Output files appear whole or not at all: written beside the target, renamed over it last
// (devices and FIFOs, which cannot be replaced, are written directly).
#pragma once

#include <string>

namespace tally_cli {

/// Whether two paths name one file (the same device and inode, through symlinks); false where
/// either does not exist.
bool same_file(const std::string& a, const std::string& b);

/// One output file. A regular file, or a new path, is replaced whole: the bytes go to a temporary
/// file beside it, renamed over it at commit. A character device or FIFO cannot be replaced (that
/// would swap a device node for a file): it is written directly, at commit. Anything else is an
/// error. Through a symlink, the file it names is written and the link stays.
class staged_file {
 public:
  /// Checks the target and, for a regular file or a new path, writes `bytes` to a new temporary
  /// file in the directory of the file written; for a device or FIFO, opens it and keeps `bytes`
  /// for commit. Throws failure (and leaves nothing behind) for a directory, socket or block
  /// device, a FIFO that no process is reading, or any file that cannot be written. Until commit
  /// or destruction, SIGINT, SIGTERM and SIGHUP remove the temporary file before they end the
  /// process.
  staged_file(std::string target, std::string bytes);
  /// Removes the temporary file unless it was committed.
  ~staged_file();
  staged_file(const staged_file&) = delete;
  staged_file& operator=(const staged_file&) = delete;

  /// Whether commit writes into the target (a device or FIFO) rather than renaming over it; such
  /// a write cannot be undone, so callers commit these before the renames.
  bool direct() const { return fd_ >= 0; }
  /// Renames the temporary file over the target, or writes the bytes into the device or FIFO
  /// (a write error such as ENOSPC, or a reader gone, is a failure).
  void commit();

 private:
  void stage(const std::string& bytes);

  std::string target_;  // the file written: the named one, or the one its symlink points at
  std::string named_;   // as the user gave it, for messages
  std::string temp_;
  std::string bytes_;   // kept for commit where written directly
  int fd_ = -1;         // the open device or FIFO, written directly
  int slot_ = -1;       // its place among the files a signal removes
  bool committed_ = false;
};

}  // namespace tally_cli
