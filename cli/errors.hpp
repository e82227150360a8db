// The two kinds of failure of the command-line tool; main.cpp maps them to exit codes 2 and 1.
#pragma once

#include <stdexcept>

namespace tally_cli {

/// The command line itself is wrong (bad option, value or combination): exit code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The command line is fine but the work failed (unreadable or malformed input, a file that
/// cannot be written): exit code 1, as for tally::error.
struct failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tally_cli
