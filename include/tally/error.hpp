// tally::error: the one exception type every bad argument and every backend failure raises.
#pragma once

#include <stdexcept>
#include <string>

namespace tally {

/// Raised for bad arguments (before anything is computed or written) and for backend
/// failures. The message says what is wrong and what is expected.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tally
