// A one-line progress bar on stderr, shown only on a terminal and only for work past a second.
#pragma once

#include <chrono>
#include <cstdint>

namespace tally_cli {

class progress {
 public:
  explicit progress(std::uint64_t total);
  /// Clears the bar if it was drawn.
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  void advance(std::uint64_t amount);
  /// Erases the bar (if drawn) and draws no more: the report prints on a clean line.
  void clear();

 private:
  using clock = std::chrono::steady_clock;
  std::uint64_t total_, done_ = 0;
  bool tty_;
  bool drawn_ = false;
  bool cleared_ = false;
  clock::time_point start_, last_draw_;
};

}  // namespace tally_cli
