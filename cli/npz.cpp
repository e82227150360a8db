// The zip container of .npz files, read by its central directory (zip64 included): stored and
// deflated members, the latter inflated by zlib.
#include "npz.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "errors.hpp"
#include "readers.hpp"

namespace tally_cli {
namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50,
                        kEnd64 = 0x06064b50, kEnd64Locator = 0x07064b50;

std::uint64_t le(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

struct member {
  std::string name;
  int method = 0;
  std::uint64_t compressed = 0, size = 0, local_offset = 0;
};

void read_at(std::FILE* f, std::uint64_t offset, void* out, std::size_t n, const std::string& path) {
  if (std::fseek(f, static_cast<long>(offset), SEEK_SET) != 0 || std::fread(out, 1, n, f) != n)
    throw failure(path + ": damaged .npz (the zip directory points past the file's end)");
}

/// The archive's members, from its central directory.
std::vector<member> members(std::FILE* f, const std::string& path) {
  const std::string damaged = path + ": damaged .npz (no zip directory)";
  const std::uint64_t bytes = file_size(f, path);
  // The end record: 22 bytes, plus a comment of up to 64 KiB.
  const std::uint64_t tail_size = std::min<std::uint64_t>(bytes, 22 + 65535);
  std::vector<unsigned char> tail(tail_size);
  read_at(f, bytes - tail_size, tail.data(), tail.size(), path);
  std::int64_t end = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail_size) - 22; i >= 0; --i)
    if (le(&tail[i], 4) == kEnd) {
      end = i;
      break;
    }
  if (end < 0) throw failure(damaged);
  std::uint64_t count = le(&tail[end + 10], 2), dir_size = le(&tail[end + 12], 4), dir_offset = le(&tail[end + 16], 4);
  if (count == 0xFFFF || dir_size == 0xFFFFFFFF || dir_offset == 0xFFFFFFFF) {
    // zip64: a locator just before the end record names the zip64 end record.
    const std::uint64_t at = bytes - tail_size + static_cast<std::uint64_t>(end);
    unsigned char locator[20];
    if (at < 20) throw failure(damaged);
    read_at(f, at - 20, locator, sizeof locator, path);
    if (le(locator, 4) != kEnd64Locator) throw failure(damaged);
    unsigned char end64[56];
    read_at(f, le(locator + 8, 8), end64, sizeof end64, path);
    if (le(end64, 4) != kEnd64) throw failure(damaged);
    count = le(end64 + 32, 8);
    dir_size = le(end64 + 40, 8);
    dir_offset = le(end64 + 48, 8);
  }
  if (dir_size > bytes || dir_offset > bytes - dir_size) throw failure(damaged);
  std::vector<unsigned char> dir(dir_size);
  read_at(f, dir_offset, dir.data(), dir.size(), path);
  std::vector<member> out;
  std::size_t p = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (p + 46 > dir.size() || le(&dir[p], 4) != kCentralHeader) throw failure(damaged);
    member m;
    m.method = static_cast<int>(le(&dir[p + 10], 2));
    m.compressed = le(&dir[p + 20], 4);
    m.size = le(&dir[p + 24], 4);
    const std::size_t name_len = le(&dir[p + 28], 2), extra_len = le(&dir[p + 30], 2),
                      comment_len = le(&dir[p + 32], 2);
    m.local_offset = le(&dir[p + 42], 4);
    if (p + 46 + name_len + extra_len + comment_len > dir.size()) throw failure(damaged);
    m.name.assign(reinterpret_cast<const char*>(&dir[p + 46]), name_len);
    // zip64 sizes and offset, in this order, for the fields that hold 0xFFFFFFFF.
    for (std::size_t e = p + 46 + name_len; e + 4 <= p + 46 + name_len + extra_len;) {
      const std::uint64_t id = le(&dir[e], 2), len = le(&dir[e + 2], 2);
      if (id == 1) {
        std::size_t at = e + 4;
        for (std::uint64_t* field : {&m.size, &m.compressed, &m.local_offset})
          if (*field == 0xFFFFFFFF && at + 8 <= e + 4 + len) {
            *field = le(&dir[at], 8);
            at += 8;
          }
      }
      e += 4 + len;
    }
    out.push_back(std::move(m));
    p += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

std::string key_of(const std::string& name) {
  const std::string suffix = ".npy";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0
             ? name.substr(0, name.size() - suffix.size())
             : name;
}

std::string listed(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

bool is_zip(std::FILE* f) {
  unsigned char head[4] = {};
  const std::size_t got = std::fread(head, 1, sizeof head, f);
  std::rewind(f);
  return got == 4 && le(head, 4) == kLocalHeader;
}

std::FILE* npz_member(std::FILE* f, const std::string& path, const std::string& key, std::string& found) {
  const std::vector<member> all = members(f, path);
  std::vector<std::string> keys;
  for (const member& m : all) keys.push_back(key_of(m.name));
  if (all.empty()) throw failure(path + ": an .npz archive with no arrays");
  if (key.empty() && all.size() > 1)
    throw usage_error(path + " holds " + std::to_string(all.size()) + " arrays (" + listed(keys) +
                      "); give --key NAME");
  const auto at = key.empty() ? keys.begin() : std::find(keys.begin(), keys.end(), key);
  if (at == keys.end()) throw usage_error("--key " + key + ": " + path + " holds " + listed(keys));
  const member& m = all[static_cast<std::size_t>(at - keys.begin())];
  found = *at;
  const std::string name = path + "[" + found + "]";
  if (m.method != 0 && m.method != 8)
    throw failure(name + ": compression method " + std::to_string(m.method) +
                  " is not supported (numpy's stored and deflated members are)");
  unsigned char local[30];
  read_at(f, m.local_offset, local, sizeof local, path);
  if (le(local, 4) != kLocalHeader) throw failure(path + ": damaged .npz (a member's header is missing)");
  const std::uint64_t data = m.local_offset + 30 + le(local + 26, 2) + le(local + 28, 2);
  if (std::fseek(f, static_cast<long>(data), SEEK_SET) != 0) throw failure(path + ": cannot seek: " + std::strerror(errno));

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::tmpfile(), &std::fclose);
  if (!out) throw failure(name + ": cannot make a temporary copy: " + std::strerror(errno));
  std::vector<unsigned char> in(1 << 20), buffer(1 << 20);
  std::uint64_t left = m.compressed, written = 0;
  z_stream z{};
  if (m.method == 8 && inflateInit2(&z, -MAX_WBITS) != Z_OK) throw failure(name + ": cannot start zlib");
  const auto finish = [&] {
    if (m.method == 8) inflateEnd(&z);
  };
  try {
    int status = Z_OK;
    while (left > 0 && status != Z_STREAM_END) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, in.size()));
      if (std::fread(in.data(), 1, n, f) != n) throw failure(name + ": truncated .npz member");
      left -= n;
      if (m.method == 0) {
        if (std::fwrite(in.data(), 1, n, out.get()) != n) throw failure(name + ": cannot write its temporary copy");
        written += n;
        continue;
      }
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(n);
      do {
        z.next_out = buffer.data();
        z.avail_out = static_cast<uInt>(buffer.size());
        status = inflate(&z, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
          throw failure(name + ": damaged deflate data (" + std::string(z.msg ? z.msg : "zlib error") + ")");
        const std::size_t got = buffer.size() - z.avail_out;
        if (std::fwrite(buffer.data(), 1, got, out.get()) != got) throw failure(name + ": cannot write its temporary copy");
        written += got;
      } while (z.avail_out == 0 && status != Z_STREAM_END);
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
  if (written != m.size)
    throw failure(name + ": damaged .npz member (" + std::to_string(written) + " bytes where the directory says " +
                  std::to_string(m.size) + ")");
  std::rewind(out.get());
  return out.release();
}

}  // namespace tally_cli
