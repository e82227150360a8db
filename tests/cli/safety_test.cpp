// The tool never destroys data: outputs that are inputs are refused, symlinks are written
// through, devices and FIFOs are written in place (never replaced by a file), pipes are not
// waited on, and a signal during the writing leaves no temporary file.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <stb_image_write.h>

#include "harness.hpp"
#include "plot_check.hpp"

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

// A dangling symlink: the file it names is created (as `sort -o` and the shell's `>` do), the
// link kept.
TEST(Safety, DanglingSymlinkedOutputsCreateTheFileTheyName) {
  scratch dir;
  write_bytes(dir.path("a.npy"), f64_npy(20));
  fs::create_symlink("made.csv", dir.path("out.csv"));
  const outcome o = tally({"hist", dir.path("a.npy"), "--bins", "4", "--out", dir.path("out.csv")});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(fs::is_symlink(dir.path("out.csv")));
  EXPECT_EQ(read_bytes(dir.path("made.csv")).rfind("channel,bin_lo,bin_hi,count\n", 0), 0u);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"a.npy", "made.csv", "out.csv"}));
}

bool is_char_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

/// Makes `name` in `dir` a character device like /dev/null or /dev/full (1, 3 and 1, 7), the
/// way the issue's `mknod full.csv c 1 7` does; false where this process may not. (Not a link to
/// /dev: a tool that replaced devices would replace the system's when the tests run as root.)
bool make_char_device(const scratch& dir, const std::string& name, unsigned minor) {
  return ::mknod(dir.path(name).c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

// `mknod full.csv c 1 7; tally hist good.npy --out full.csv` once exited 0 with full.csv made a
// regular file: a device is written, not replaced, and its write errors are errors.
TEST(Safety, CharacterDevicesAreWrittenNotReplaced) {
  scratch dir;
  if (!make_char_device(dir, "null.csv", 3) || !make_char_device(dir, "full.csv", 7))
    GTEST_SKIP() << "mknod is not permitted here";
  write_bytes(dir.path("a.npy"), f64_npy(20));
  fs::create_symlink("full.csv", dir.path("link.csv"));
  const std::vector<std::string> files = {"a.npy", "full.csv", "full.svg", "link.csv", "null.csv"};
  const outcome null = tally({"hist", dir.path("a.npy"), "--out", dir.path("null.csv")});
  EXPECT_EQ(null.code, 0) << null.err;
  const outcome full = tally({"hist", dir.path("a.npy"), "--out", dir.path("full.csv")});
  EXPECT_EQ(full.code, kFailure);
  EXPECT_NE(full.err.find("cannot write " + dir.path("full.csv") + ": No space left on device"), std::string::npos)
      << full.err;
  // Through a symlink: the device it names is written (and fails), the link stays a link.
  const outcome linked = tally({"hist", dir.path("a.npy"), "--out", dir.path("link.csv")});
  EXPECT_EQ(linked.code, kFailure);
  EXPECT_NE(linked.err.find("No space left on device"), std::string::npos) << linked.err;
  EXPECT_TRUE(fs::is_symlink(dir.path("link.csv")));
  // A device write that fails leaves the other output unwritten: devices are written first.
  REQUIRE_PLOTS();
  ASSERT_TRUE(make_char_device(dir, "full.svg", 7));
  const outcome both = tally({"hist", dir.path("a.npy"), "--out", dir.path("new.csv"), "--plot", dir.path("full.svg")});
  EXPECT_EQ(both.code, kFailure);
  EXPECT_FALSE(fs::exists(dir.path("new.csv")));
  EXPECT_TRUE(is_char_device(dir.path("full.svg")));
  EXPECT_TRUE(is_char_device(dir.path("null.csv")));
  EXPECT_TRUE(is_char_device(dir.path("full.csv")));
  EXPECT_EQ(dir.listing(), files);
}

/// Bytes waiting in the pipe `fd` reads.
int waiting(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

/// Makes `path` a FIFO and returns a read end of it (not blocking), or -1. O_CLOEXEC: a read end
/// that tally inherited would keep its own FIFO open.
int fifo_with_reader(const std::string& path) {
  if (::mkfifo(path.c_str(), 0600) != 0) return -1;
  return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

// A FIFO is written for its reader and stays a FIFO; with no reader it is an error at once.
TEST(Safety, FifosAreWrittenForTheirReader) {
  scratch dir;
  write_bytes(dir.path("a.npy"), f64_npy(20));
  const int reader = fifo_with_reader(dir.path("out.csv"));
  ASSERT_GE(reader, 0);
  const outcome o = tally({"hist", dir.path("a.npy"), "--bins", "4", "--out", dir.path("out.csv")});
  EXPECT_EQ(o.code, 0) << o.err;
  std::string got(static_cast<std::size_t>(waiting(reader)), '\0');
  EXPECT_EQ(::read(reader, got.data(), got.size()), static_cast<ssize_t>(got.size()));
  ::close(reader);
  EXPECT_EQ(got.rfind("channel,bin_lo,bin_hi,count\n", 0), 0u) << got;
  EXPECT_EQ(csv_rows(got).size(), 5u) << got;
  EXPECT_TRUE(fs::is_fifo(dir.path("out.csv")));

  expect_refused(dir, {"hist", dir.path("a.npy"), "--out", dir.path("out.csv")}, kFailure,
                 "a FIFO that no process is reading");
  EXPECT_TRUE(fs::is_fifo(dir.path("out.csv")));
}

// Outputs of other kinds are refused and left as they are.
TEST(Safety, SocketsAndBlockDevicesAreRefused) {
  scratch dir;
  write_bytes(dir.path("a.npy"), f64_npy(20));
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = dir.path("sock.csv");
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  expect_refused(dir, {"hist", dir.path("a.npy"), "--out", socket_path}, kFailure, "it is a socket");
  EXPECT_EQ(fs::status(socket_path).type(), fs::file_type::socket);
  ::close(sock);
  // A block device (a loop device's numbers, 7, 0), where this process may make one.
  if (::mknod(dir.path("block.svg").c_str(), S_IFBLK | 0600, makedev(7, 0)) == 0) {
    REQUIRE_PLOTS();
    expect_refused(dir, {"hist", dir.path("a.npy"), "--plot", dir.path("block.svg")}, kFailure,
                   "it is a block device");
    EXPECT_TRUE(fs::is_block_file(dir.path("block.svg")));
  }
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

// SIGINT or SIGTERM at any moment of a run that writes two large outputs (one where this build
// draws no plots): whatever moment it lands (reading, writing, renaming), no temporary file is
// left behind.
TEST(Safety, SignalsLeaveNoTemporaryFile) {
  scratch dir;
  std::vector<std::int32_t> v(200000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i * 7 % 3000000);
  write_bytes(dir.path("a.npy"), npy("<i4", {static_cast<std::int64_t>(v.size())}, bytes_of(v)));
  int interrupted = 0;
  for (int delay_ms = 20; delay_ms <= 1000; delay_ms += 70) {
    std::vector<std::string> args = {"hist", dir.path("a.npy"), "--integer", "--range", "0,3000000", "--no-bars",
                                     "--out", dir.path("o.csv")};
    if (tally_cli::plots_available()) args.insert(args.end(), {"--plot", dir.path("o.svg")});
    const pid_t pid = spawn_tally(args);
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

// A reader that goes away mid-write: an error (EPIPE), not death by SIGPIPE.
TEST(Safety, AFifoWhoseReaderLeavesIsAnError) {
  scratch dir;
  write_bytes(dir.path("a.npy"), f64_npy(20));
  const int reader = fifo_with_reader(dir.path("out.csv"));
  ASSERT_GE(reader, 0);
  // 40000 rows: about 1 MB, more than a pipe holds, so the write is still going when the
  // reader leaves.
  const pid_t pid = spawn_tally({"hist", dir.path("a.npy"), "--bins", "40000", "--no-bars", "--out", dir.path("out.csv")});
  ASSERT_GT(pid, 0);
  // Until bytes wait in the FIFO (or tally has ended), then at most 20 s for tally to end.
  int status = 0;
  pid_t done = 0;
  for (int waited = 0; waited < 2000 && waiting(reader) == 0 && (done = ::waitpid(pid, &status, WNOHANG)) == 0; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(waiting(reader), 0) << "nothing was written to the FIFO";
  ::close(reader);
  for (int waited = 0; waited < 2000 && done == 0; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    done = ::waitpid(pid, &status, WNOHANG);
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "tally still writing 20 s after its reader left";
  }
  EXPECT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, kFailure);
  EXPECT_TRUE(fs::is_fifo(dir.path("out.csv")));
}


// `tally hist --threads 1000` under a 4 GiB address-space limit once ended in "libgomp: Thread
// creation failed": 610 threads of 8 MiB stacks for 40 M samples. Counts above the machine's
// threads are capped at them (as --help says).
TEST(Safety, AnOutputPastTheFileSizeLimitIsAnError) {
  // Under `ulimit -f` a write past the limit raises SIGXFSZ, which ends a process by default:
  // the tool holds it back, reports the write's EFBIG and leaves no partial file.
  scratch dir;
  write_bytes(dir.path("a.npy"), f64_npy(4096));
  const std::vector<std::string> before = dir.listing();
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 16384;  // bytes: the CSV of 4096 bins is larger
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const outcome o = tally({"hist", dir.path("a.npy"), "--bins", "4096", "--no-bars", "--out", dir.path("out.csv")});
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  EXPECT_EQ(o.code, kFailure) << o.err;
  EXPECT_NE(o.err.find("tally: error: cannot write " + dir.path("out.csv")), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("File too large"), std::string::npos) << o.err;
  EXPECT_EQ(dir.listing(), before);
}

TEST(Safety, ThreadsBeyondTheMachineAreCapped) {
  const unsigned machine = std::thread::hardware_concurrency();
  const outcome help = tally({"hist", "--help"});
  EXPECT_NE(help.out.find("are capped at " + std::to_string(machine == 0 ? 1 : machine)), std::string::npos)
      << help.out;
  // Each thread may also reserve a 64 MiB malloc arena: past 32 threads the limit below is too
  // tight even for the threads the machine has.
  if (machine > 32) GTEST_SKIP() << machine << " hardware threads: too many for a 4 GiB limit";
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory needs terabytes of address space: no program of "
                  "this build starts under a 4 GiB limit";
#endif
  scratch dir;
  write_bytes(dir.path("big.u8"), std::string(40'000'000, '\7'));
  const outcome o = tally_limited(
      {"hist", dir.path("big.u8"), "--dtype", "u8", "--bins", "4", "--range", "0,256", "--threads", "1000"},
      4u << 20);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("samples 40000000"), std::string::npos) << o.out;
  EXPECT_EQ(tally({"hist", dir.path("big.u8"), "--dtype", "u8", "--threads", "-1"}).code, kUsage);
}

}  // namespace
}  // namespace cli_test
