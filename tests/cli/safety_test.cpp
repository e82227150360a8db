// The tool never destroys data: outputs that are inputs are refused, symlinks are written
// through, pipes are not waited on, and a signal during the writing leaves no temporary file.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <stb_image_write.h>

#include "harness.hpp"

extern char** environ;

namespace cli_test {
namespace {

namespace fs = std::filesystem;

constexpr int kUsage = 2, kFailure = 1;

std::string f64_npy(int n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = 0.25 * i;
  return npy("<f8", {n}, bytes_of(v));
}

/// Runs tally with args; expects a refusal with `code` whose one line says `says`, every file in
/// the directory unchanged and no new one.
void expect_refused(const scratch& dir, const std::vector<std::string>& args, int code, const std::string& says) {
  const std::vector<std::string> before = dir.listing();
  std::vector<std::string> contents;  // of the regular files (reading a FIFO would wait)
  const auto regular = [&](const std::string& name) { return fs::is_regular_file(dir.path(name)); };
  for (const auto& name : before) contents.push_back(regular(name) ? read_bytes(dir.path(name)) : "");
  const outcome o = tally(args);
  EXPECT_EQ(o.code, code) << o.err;
  EXPECT_EQ(o.err.rfind("tally: error: ", 0), 0u) << o.err;
  EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
  EXPECT_EQ(dir.listing(), before);
  for (std::size_t i = 0; i < before.size(); ++i)
    if (regular(before[i])) {
      EXPECT_EQ(read_bytes(dir.path(before[i])), contents[i]) << before[i] << " changed";
    }
}

TEST(Safety, OutputsThatAreInputsAreRefused) {
  scratch dir;
  const unsigned char rgb[12] = {1, 2, 3, 40, 50, 60, 7, 8, 9, 200, 100, 0};
  ASSERT_TRUE(stbi_write_png(dir.path("a.png").c_str(), 4, 1, 3, rgb, 4 * 3));
  write_bytes(dir.path("x.npy"), f64_npy(20));
  write_bytes(dir.path("w.json"), bytes_of(std::vector<double>(20, 1.0)));  // raw f64 weights
  write_bytes(dir.path("o.csv"), "an earlier output");
  fs::create_symlink(dir.path("a.png"), dir.path("link.csv"));
  fs::create_symlink(dir.path("o.csv"), dir.path("link.svg"));
  ASSERT_EQ(::link(dir.path("x.npy").c_str(), dir.path("hard.svg").c_str()), 0);
  const std::string png = dir.path("a.png"), x = dir.path("x.npy");
  // The same name, the weights, a symlink to the input, a hard link, one file for both outputs.
  expect_refused(dir, {"hist", png, "--plot", png}, kUsage, "is the input");
  expect_refused(dir, {"hist", x, "--weights", dir.path("w.json"), "--out", dir.path("w.json")}, kUsage,
                 "is the weights file");
  expect_refused(dir, {"hist", png, "--out", dir.path("link.csv")}, kUsage, "is the input");
  expect_refused(dir, {"hist", x, "--plot", dir.path("hard.svg")}, kUsage, "is the input");
  expect_refused(dir, {"hist", x, "--out", dir.path("o.csv"), "--plot", dir.path("link.svg")}, kUsage,
                 "name one file");
}

TEST(Safety, SymlinkedOutputsAreWrittenThrough) {
  scratch dir;
  write_bytes(dir.path("a.npy"), f64_npy(20));
  fs::create_directory(dir.path("real"));
  write_bytes(dir.path("real/out.csv"), "old");
  fs::create_symlink("real/out.csv", dir.path("out.csv"));  // relative, as ln -s makes them
  const outcome o = tally({"hist", dir.path("a.npy"), "--bins", "4", "--out", dir.path("out.csv")});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(fs::is_symlink(dir.path("out.csv")));
  const std::string written = read_bytes(dir.path("real/out.csv"));
  EXPECT_NE(written, "old");
  EXPECT_NE(written.find(","), std::string::npos) << written;
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"a.npy", "out.csv", "real"}));
  EXPECT_EQ(fs::directory_iterator(dir.path("real"))->path().filename(), "out.csv");
}

TEST(Safety, PipesAndDevicesAreRefusedWithoutWaiting) {
  scratch dir;
  ASSERT_EQ(::mkfifo(dir.path("fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  expect_refused(dir, {"hist", dir.path("fifo")}, kFailure, "not a regular file");
  write_bytes(dir.path("a.npy"), f64_npy(20));
  expect_refused(dir, {"hist", dir.path("a.npy"), "--weights", dir.path("fifo")}, kFailure, "not a regular file");
  expect_refused(dir, {"hist", "/dev/zero", "--dtype", "f64"}, kFailure, "not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

/// Starts tally with args, its output discarded; returns its pid.
pid_t spawn_tally(const std::vector<std::string>& args) {
  std::vector<std::string> all{TALLY_EXE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, TALLY_EXE, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// SIGINT or SIGTERM at any moment of a run that writes two large outputs: whatever moment it
// lands (reading, writing, renaming), no temporary file is left behind.
TEST(Safety, SignalsLeaveNoTemporaryFile) {
  scratch dir;
  std::vector<std::int32_t> v(200000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i * 7 % 3000000);
  write_bytes(dir.path("a.npy"), npy("<i4", {static_cast<std::int64_t>(v.size())}, bytes_of(v)));
  int interrupted = 0;
  for (int delay_ms = 20; delay_ms <= 1000; delay_ms += 70) {
    const pid_t pid = spawn_tally({"hist", dir.path("a.npy"), "--integer", "--range", "0,3000000", "--no-bars",
                                   "--out", dir.path("o.csv"), "--plot", dir.path("o.svg")});
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, delay_ms % 140 == 20 ? SIGTERM : SIGINT);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    interrupted += WIFSIGNALED(status);
    for (const auto& name : dir.listing())
      EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name << " left after a signal at " << delay_ms << " ms";
  }
  EXPECT_GT(interrupted, 0) << "no run was still going when its signal came";
}

}  // namespace
}  // namespace cli_test
