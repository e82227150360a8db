// Redraws at most ten times a second; the first second stays silent so quick runs print nothing.
#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace tally_cli {

progress::progress(std::uint64_t total)
    : total_(std::max<std::uint64_t>(total, 1)),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(clock::now()),
      last_draw_(start_) {}

progress::~progress() { clear(); }

void progress::clear() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
  cleared_ = true;
}

void progress::advance(std::uint64_t amount) {
  done_ = std::min(total_, done_ + amount);
  if (!tty_ || cleared_) return;
  const auto now = clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_draw_ < std::chrono::milliseconds(100))
    return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int width = 30;
  const double fraction = static_cast<double>(done_) / total_;
  const int filled = static_cast<int>(fraction * width);
  std::string bar;
  for (int k = 0; k < width; ++k) bar += k < filled ? "█" : "░";
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r%s %5.1f%%  %.0fs elapsed, about %.0fs left", bar.c_str(), fraction * 100,
               elapsed, fraction > 0 ? elapsed * (1 / fraction - 1) : 0.0);
  std::fflush(stderr);
}

}  // namespace tally_cli
