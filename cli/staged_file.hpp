// Output files appear whole or not at all: written beside the target, renamed over it last.
#pragma once

#include <string>

namespace tally_cli {

class staged_file {
 public:
  /// Writes `bytes` to a new temporary file in the target's directory; throws failure (and
  /// leaves nothing behind) when it cannot.
  staged_file(std::string target, const std::string& bytes);
  /// Removes the temporary file unless it was committed.
  ~staged_file();
  staged_file(const staged_file&) = delete;
  staged_file& operator=(const staged_file&) = delete;

  /// Renames the temporary file over the target.
  void commit();

 private:
  std::string target_;
  std::string temp_;
  bool committed_ = false;
};

}  // namespace tally_cli
