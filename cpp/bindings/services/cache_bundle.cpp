// What bundles (python/jitkernel/_fleet/bundle.py) need of the compile cache, so
// that the entry layout is written down once, in the core: an entry's name
// from its key and back, its header size, checking that bytes are a valid
// entry file for a key (whole, or streamed in pieces: import verifies a
// bundle with memory that does not grow with it), reading the entries of a
// tier-shaped folder (export), writing entry files into one (import --into),
// storing a payload through the cache's own atomic store (cap, private
// folder, temp file + rename), and reading a bundle file through the core's
// bundle store (cache/bundle_file.hpp: every check of the format, streamed).
// Writing a bundle file is bundle.py's.
#include <Python.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "services/cache_keys.hpp"
#include "jitkernel/cache/bundle_file.hpp"
#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/cache/entry_folder.hpp"
#include "jitkernel/cache/serving_alias.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

std::string_view view(const nb::bytes& data) { return {data.c_str(), data.size()}; }

// Raises OSError(error, message or strerror(error)) (FileExistsError for
// EEXIST, ...), as the os functions this code replaced did.
[[noreturn]] void raise_os_error(int error, const char* message = nullptr) {
  nb::object args = nb::make_tuple(error, message != nullptr ? std::string(message) : cache::errno_text(error));
  PyErr_SetObject(PyExc_OSError, args.ptr());
  throw nb::python_error();
}

// The key and kind an entry file name stands for (ArgumentError "name" when it is not one).
std::pair<cache::Digest, cache::EntryKind> entry_name_arg(const std::string& name) {
  std::pair<cache::Digest, cache::EntryKind> out{};
  if (!cache::key_of_entry_name(name, out.first, &out.second))
    throw ArgumentError("name", "expected '<64 lowercase hex digits>.jkc', '.jka' or '.jkt', got '" + name.substr(0, 80) + "'");
  return out;
}

// "" when `data` is a valid entry file for `key`, else why not.
std::string check_entry(const cache::Digest& key, std::string_view data) {
  cache::EntryCheck check(key, data.size());
  check.update(data);
  return check.finish();
}

// The entries of a tier-shaped folder, sorted by name: (name, size).
std::vector<std::tuple<std::string, std::uint64_t>> folder_entries(const cache::EntryFolder& folder) {
  std::vector<cache::StoredFile> files;
  {
    nb::gil_scoped_release unlocked;
    folder.list(files);
  }
  std::vector<std::tuple<std::string, std::uint64_t>> out;
  for (cache::StoredFile& f : files) out.emplace_back(std::move(f.name), f.size);
  std::sort(out.begin(), out.end());
  return out;
}

// The entry file `name` of a tier-shaped folder when it is a valid entry
// of at most `max_bytes`, else None.
nb::object folder_read(const cache::EntryFolder& folder, const std::string& name, std::uint64_t max_bytes) {
  cache::Digest key{};
  cache::EntryKind kind = cache::EntryKind::Binary;
  if (!cache::key_of_entry_name(name, key, &kind)) return nb::none();
  std::string payload;
  {
    nb::gil_scoped_release unlocked;
    if (folder.load(key, kind, max_bytes, payload) != cache::Read::Hit) return nb::none();
  }
  // The entry file as a folder holds it: its header again (the same bytes:
  // the check passed), then the payload, written once into the bytes object.
  const cache::EntryHeaderBytes header = cache::encode_entry_header(key, payload);
  nb::object out = nb::steal(PyBytes_FromStringAndSize(nullptr, Py_ssize_t(header.size() + payload.size())));
  if (!out.is_valid()) throw nb::python_error();
  char* at = api::bytes_data(out.ptr());
  std::memcpy(at, header.data(), header.size());
  std::memcpy(at + header.size(), payload.data(), payload.size());
  return out;
}

void bind_entries(nb::module_& m) {
  using namespace nb::literals;
  m.attr("_cache_entry_header_size") = cache::kEntryHeaderSize;
  m.def(
      "_cache_entry_key",
      [](const std::string& name) -> std::optional<std::string> {
        cache::Digest key{};
        if (!cache::key_of_entry_name(name, key)) return std::nullopt;
        return cache::to_hex(key);
      },
      "name"_a, "The key (hex) an entry file name stands for, or None when it is not one (internal: bundles).");
  m.def(
      "_cache_entry_name", [](const std::string& key_hex) { return cache::entry_name(key_arg(key_hex)); },
      "key"_a, "The entry file name of a key (hex) (internal: bundles).");
  m.def(
      "_cache_alias_target",
      [](nb::bytes payload) -> std::optional<std::string> {
        const std::optional<cache::Digest> key = cache::decode_alias(view(payload));
        if (!key) return std::nullopt;
        return cache::to_hex(*key);
      },
      "payload"_a, "The key (hex) a serving alias's payload names, or None when it is not one (internal: bundles).");
  m.def(
      "_cache_entry_check",
      [](const std::string& key_hex, nb::bytes data) { return check_entry(key_arg(key_hex), view(data)); }, "key"_a,
      "data"_a, "'' when data is a valid cache entry file for the key (hex), else why not (internal: bundles).");
  nb::class_<cache::EntryCheck>(m, "_CacheEntryCheck",
                                "Checks a cache entry file given in pieces (internal: bundles stream theirs).")
      .def("__init__",
           [](cache::EntryCheck* self, const std::string& key_hex, std::uint64_t size) {
             new (self) cache::EntryCheck(key_arg(key_hex), size);
           },
           "key"_a, "size"_a)
      .def(
          "update",
          [](cache::EntryCheck& self, nb::bytes data) {
            if (self.finished()) throw ArgumentError("data", "the entry check is finished");
            self.update(view(data));
          },
          "data"_a, "Adds the next piece of the file.")
      .def("finish", &cache::EntryCheck::finish,
           "'' when the pieces were a valid entry file for the key, of the announced size, else why not.");
  m.def(
      "_cache_store_entry",
      [](const std::string& name, nb::bytes data) {
        const auto [key, kind] = entry_name_arg(name);
        if (!check_entry(key, view(data)).empty()) throw ArgumentError("data", "not a valid cache entry");
        // A view, not a copy: an entry may be as large as the cache's cap.
        const std::string_view payload = view(data).substr(cache::kEntryHeaderSize);
        nb::gil_scoped_release unlocked;  // `data` stays referenced by the caller meanwhile
        cache::store(key, payload, kind);
      },
      "name"_a, "data"_a,
      "Stores a checked entry file's payload under its name (key and kind) through the cache's atomic store "
      "(internal: bundles).");
}

nb::list bundle_members(const cache::BundleFile& b) {
  nb::list out;
  for (const cache::BundleFile::Member& m : b.members()) {
    out.append(nb::make_tuple(m.name, m.size, cache::to_hex(m.sha256)));
  }
  return out;
}

nb::bytes bundle_read(const cache::BundleFile& b, std::size_t index, std::uint64_t offset, std::size_t size) {
  if (index >= b.members().size()) throw ArgumentError("index", "no such member");
  if (size > (std::size_t{1} << 24)) throw ArgumentError("size", "read a member in pieces of at most 16 MiB");
  std::string piece;
  bool ok = false;
  {
    nb::gil_scoped_release unlocked;
    ok = b.read(index, offset, size, piece);
  }
  if (!ok) throw ArgumentError("offset", "the bundle ends before this piece of member " + b.members()[index].name);
  return nb::bytes(piece.data(), piece.size());
}

void bind_folders(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<cache::BundleFile>(m, "_CacheBundle",
                                "A bundle file opened and checked whole by the core's bundle store (internal: "
                                "import).")
      .def("__init__",
           [](cache::BundleFile* self, const std::string& path, std::uint64_t max_bytes) {
             nb::gil_scoped_release unlocked;  // checking streams the whole file
             new (self) cache::BundleFile(path, max_bytes);
           },
           "path"_a, "max_bytes"_a)
      .def_prop_ro("problem", &cache::BundleFile::problem, "Why the bundle is refused ('' when it passed).")
      .def_prop_ro("version", &cache::BundleFile::version, "The jitkernel version that wrote it.")
      .def("members", &bundle_members, "(name, size, sha256 hex) of each member, in file order.")
      .def("read", &bundle_read, "index"_a, "offset"_a, "size"_a,
           "`size` bytes of member `index` from `offset` within it.");
  nb::class_<cache::EntryFolder>(m, "_CacheFolder",
                                 "The entries of a tier-shaped folder (<folder>/kernels), read as found "
                                 "(internal: export).")
      .def(nb::init<const std::string&>(), "directory"_a)
      .def_prop_ro("where", &cache::EntryFolder::where, "The kernels folder.")
      .def_prop_ro("problem", &cache::EntryFolder::problem, "Why it cannot be read ('' when it can).")
      .def("entries", &folder_entries, "(name, size) of each entry file, sorted by name.")
      .def("read", &folder_read, "name"_a, "max_bytes"_a,
           "The entry file `name` when it is a valid entry of at most max_bytes bytes, else None.");
  using Writer = cache::TierWriter;
  nb::class_<Writer>(m, "_CacheTierWriter",
                     "Writes entry files into a folder laid out as a read-only tier (internal: import --into).")
      .def("__init__", [](Writer* self, const std::string& directory) { new (self) Writer(directory); },
           "directory"_a)
      .def_prop_ro("where", &Writer::where, "The kernels folder.")
      .def_prop_ro("problem", &Writer::problem, "Why entries cannot be written there ('' when they can).")
      .def(
          "begin",
          [](Writer& self, const std::string& name, std::uint64_t size) {
            const auto [key, kind] = entry_name_arg(name);
            if (!self.begin(key, kind, size)) {
              const int error = errno;
              if (error == EEXIST) raise_os_error(error, "no free temp file name after 16 tries");
              raise_os_error(error);
            }
          },
          "name"_a, "size"_a, "Starts the entry file `name`, `size` bytes (a new temp file); OSError.")
      .def(
          "write",
          [](Writer& self, nb::bytes data) {
            if (!self.write(view(data))) raise_os_error(errno);
          },
          "data"_a, "Writes the next piece; OSError.")
      .def(
          "commit",
          [](Writer& self) {
            std::string why;
            if (self.commit(why) == Writer::Commit::Failed) raise_os_error(errno);
            return why;
          },
          "Renames the entry file into place: '' when it was a valid entry, else why not (then it is removed); "
          "OSError.")
      .def("abort", &Writer::abort, "Removes the entry file being written.");
  m.def("_cache_predict_temp_tokens", &cache::predict_temp_tokens_for_tests, "token"_a, "count"_a,
        "The next `count` temp names _CacheTierWriter tries use `token` as their random part (internal, tests).");
}

void bind(nb::module_& m) {
  bind_entries(m);
  bind_folders(m);
}

const Registration reg(order::toolkit, "cache_bundle", bind);

}  // namespace
}  // namespace jk::py
