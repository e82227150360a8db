// tally::error: the exception every bad argument and every backend failure raises (memory_error,
// one kind of it, where memory runs short).
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

/// Raised, before anything is allocated or written, where a histogram's cells or a fill's
/// working copies would not fit the memory this process can have (the message says how much
/// was needed and how much there is). Python raises MemoryError for it.
class memory_error : public error {
 public:
  using error::error;
};

}  // namespace tally
