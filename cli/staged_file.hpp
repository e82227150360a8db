// Output files appear whole or not at all: written beside the target, renamed over it last.
#pragma once

#include <string>

namespace tally_cli {

/// Whether two paths name one file (the same device and inode, through symlinks); false where
/// either does not exist.
bool same_file(const std::string& a, const std::string& b);

class staged_file {
 public:
  /// Writes `bytes` to a new temporary file in the target's directory (the directory of the
  /// file a symlink target points to: the link stays, the file it names is replaced); throws
  /// failure (and leaves nothing behind) when it cannot. Until commit or destruction, SIGINT,
  /// SIGTERM and SIGHUP remove the temporary file before they end the process.
  staged_file(std::string target, const std::string& bytes);
  /// Removes the temporary file unless it was committed.
  ~staged_file();
  staged_file(const staged_file&) = delete;
  staged_file& operator=(const staged_file&) = delete;

  /// Renames the temporary file over the target.
  void commit();

 private:
  std::string target_;  // the file written: the named one, or the one its symlink points at
  std::string named_;   // as the user gave it, for messages
  std::string temp_;
  int slot_ = -1;       // its place among the files a signal removes
  bool committed_ = false;
};

}  // namespace tally_cli
