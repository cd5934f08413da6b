// The bundle store (bundle_file.hpp): the whole-file check when opened, and
// reads that check each member's bytes again.
#include "jitkernel/cache/bundle_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/core/json.hpp"

namespace jk::cache {
namespace {

constexpr unsigned char kMagic[8] = {0x89, 'J', 'K', 'B', '\r', '\n', 0x1a, '\n'};
constexpr std::size_t kFixedHeader = 16;
constexpr std::size_t kDigestSize = 32;
constexpr std::size_t kPiece = std::size_t{1} << 20;

std::uint32_t le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// A manifest value as a message shows it: a string quoted, a number as written, anything else by its kind.
std::string shown(const json::Value& v) {
  switch (v.kind) {
    case json::Value::Kind::String: return "'" + v.text.substr(0, 80) + (v.text.size() > 80 ? "...'" : "'");
    case json::Value::Kind::Int: return std::to_string(v.integer);
    case json::Value::Kind::Bool: return v.boolean ? "True" : "False";
    case json::Value::Kind::Null: return "None";
    default: return json::kind_name(v.kind);
  }
}

bool has_keys(const json::Value& v, std::initializer_list<const char*> keys) {
  if (v.kind != json::Value::Kind::Object || v.members.size() != keys.size()) return false;
  for (const char* k : keys) {
    if (v.find(k) == nullptr) return false;
  }
  return true;
}

// A manifest entry's name, key, size and SHA-256, each checked; "" or what is wrong.
std::string member_of(const json::Value& e, BundleFile::Member& m) {
  const json::Value& name = *e.find("name");
  if (name.kind != json::Value::Kind::String || !key_of_entry_name(name.text, m.key, &m.kind)) {
    return "member " + shown(name) + ": not a cache entry name ('<64 hex digits>.jkc', '.jka' or '.jkt'); refused";
  }
  m.name = name.text;
  const json::Value& n = *e.find("size");
  if (n.kind != json::Value::Kind::Int || n.integer < static_cast<std::int64_t>(kEntryHeaderSize) ||
      static_cast<std::uint64_t>(n.integer) > kMaxBundleEntryBytes) {
    return "member " + m.name + ": size " + shown(n) + " is outside " + std::to_string(kEntryHeaderSize) + ".." +
           std::to_string(kMaxBundleEntryBytes) + " bytes";
  }
  m.size = static_cast<std::uint64_t>(n.integer);
  const json::Value& digest = *e.find("sha256");
  if (digest.kind != json::Value::Kind::String || digest.text.size() != 64 || !from_hex(digest.text, m.sha256) ||
      to_hex(m.sha256) != digest.text) {
    return "member " + m.name + ": sha256 must be 64 lowercase hex digits";
  }
  return "";
}

}  // namespace

BundleFile::BundleFile(const std::string& path, std::uint64_t max_total_bytes) : BundleFile(path, Fd(), max_total_bytes) {}

BundleFile::BundleFile(const std::string& path, Fd file, std::uint64_t max_total_bytes)
    : path_(path), fd_(std::move(file)) {
  problem_ = check(max_total_bytes);
  if (!problem_.empty()) members_.clear();
  for (std::size_t i = 0; i < members_.size(); ++i) index_.emplace(std::make_pair(members_[i].key, members_[i].kind), i);
}

std::string BundleFile::check(std::uint64_t max_total_bytes) {
  if (!fd_) fd_ = Fd(::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd_) return "cannot be read (" + errno_text(errno) + ")";
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) return "cannot be read (" + errno_text(errno) + ")";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  Sha256 whole;
  std::string why = read_manifest(file_size, max_total_bytes, whole);
  if (!why.empty()) return why;
  std::string piece;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const Member& m = members_[i];
    Sha256 own;
    EntryCheck entry(m.key, m.size);
    for (std::uint64_t done = 0; done < m.size; done += piece.size()) {
      if (!read(i, done, static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, m.size - done)), piece)) {
        return "member " + m.name + ": truncated";
      }
      whole.update(piece);
      own.update(piece);
      entry.update(piece);
    }
    if (own.finish() != m.sha256) return "member " + m.name + ": checksum mismatch";
    const std::string& invalid = entry.finish();
    if (!invalid.empty()) return "member " + m.name + ": not a valid cache entry (" + invalid + ")";
  }
  Digest recorded{};
  const std::uint64_t end = file_size - kDigestSize;
  if (!read_at(fd_.get(), recorded.data(), kDigestSize, end) || whole.finish() != recorded) {
    return "file checksum mismatch (damaged or altered)";
  }
  return "";
}

std::string BundleFile::read_manifest(std::uint64_t file_size, std::uint64_t max_total_bytes, Sha256& whole) {
  unsigned char fixed[kFixedHeader];
  if (file_size < kFixedHeader || !read_at(fd_.get(), fixed, kFixedHeader, 0)) {
    return "truncated (shorter than a bundle header)";
  }
  if (std::memcmp(fixed, kMagic, sizeof kMagic) != 0) return "not a jitkernel cache bundle (bad magic)";
  const std::uint32_t format = le32(fixed + 8), size = le32(fixed + 12);
  if (format != kBundleFormat) {
    return "bundle format version " + std::to_string(format) + "; this jitkernel reads version " +
           std::to_string(kBundleFormat);
  }
  if (size > kMaxBundleManifestBytes || kFixedHeader + size + 2 * kDigestSize > file_size) {
    return "manifest size " + std::to_string(size) + " is larger than the file or than " +
           std::to_string(kMaxBundleManifestBytes) + " bytes";
  }
  std::string head(kFixedHeader + size, '\0');
  std::memcpy(head.data(), fixed, kFixedHeader);
  Digest recorded{};
  if (!read_at(fd_.get(), head.data() + kFixedHeader, size, kFixedHeader) ||
      !read_at(fd_.get(), recorded.data(), kDigestSize, head.size()) || sha256(head) != recorded) {
    return "manifest checksum mismatch (damaged or altered)";
  }
  whole.update(head);
  whole.update(recorded.data(), recorded.size());
  json::Value manifest;
  try {
    manifest = json::parse(std::string_view(head).substr(kFixedHeader));
  } catch (const json::ParseError& e) {
    return std::string("manifest is not valid JSON (") + e.what() + ")";
  }
  const json::Value* entries = manifest.find("entries");
  const json::Value* fmt = manifest.find("format");
  if (!has_keys(manifest, {"format", "jitkernel", "total_bytes", "entries"}) ||
      fmt->kind != json::Value::Kind::Int || fmt->integer != kBundleFormat ||
      entries->kind != json::Value::Kind::Array || manifest.find("jitkernel")->kind != json::Value::Kind::String) {
    return "manifest must be an object with the keys entries, format, jitkernel, total_bytes";
  }
  version_ = manifest.find("jitkernel")->text;
  std::unordered_set<std::string> names;
  std::uint64_t total = 0, offset = head.size() + kDigestSize;
  for (std::size_t i = 0; i < entries->items.size(); ++i) {
    const json::Value& e = entries->items[i];
    if (!has_keys(e, {"name", "size", "sha256"})) {
      return "manifest entry " + std::to_string(i) + ": expected an object with the keys name, sha256, size";
    }
    Member m;
    std::string why = member_of(e, m);
    if (!why.empty()) return why;
    if (!names.insert(m.name).second) return "member " + m.name + ": appears twice";
    m.offset = offset;
    offset += m.size;
    total += m.size;
    members_.push_back(std::move(m));
  }
  const json::Value& said = *manifest.find("total_bytes");
  if (said.kind != json::Value::Kind::Int || static_cast<std::uint64_t>(said.integer) != total ||
      total > max_total_bytes) {
    return "entries total " + std::to_string(total) + " bytes; the manifest says " + shown(said) +
           " and the limit is " + std::to_string(max_total_bytes);
  }
  if (file_size != head.size() + 2 * kDigestSize + total) {
    return "file is " + std::to_string(file_size) + " bytes; its manifest describes " +
           std::to_string(head.size() + 2 * kDigestSize + total) + " (truncated or extended)";
  }
  return "";
}

bool BundleFile::read(std::size_t index, std::uint64_t offset, std::size_t size, std::string& out) const {
  const Member& m = members_.at(index);
  if (offset > m.size || size > m.size - offset) return false;
  out.resize(size);
  return read_at(fd_.get(), out.data(), size, m.offset + offset);
}

Read BundleFile::load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const {
  const auto found = index_.find({key, kind});
  if (found == index_.end()) return Read::Missing;
  {
    const std::size_t i = found->second;
    const Member& m = members_[i];
    std::string bytes;
    if (m.size > max_bytes || !read(i, 0, static_cast<std::size_t>(m.size), bytes) || sha256(bytes) != m.sha256) {
      return Read::Bad;
    }
    EntryCheck entry(key, m.size);
    entry.update(bytes);
    if (!entry.finish().empty()) return Read::Bad;
    payload.assign(bytes, kEntryHeaderSize, std::string::npos);
    return Read::Hit;
  }
}

void BundleFile::list(std::vector<StoredFile>& out) const {
  for (const Member& m : members_) out.push_back(StoredFile{m.name, m.size, false, m.kind});
}

}  // namespace jk::cache
