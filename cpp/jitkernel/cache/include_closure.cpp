// The lookup of include_closure.hpp: each name a directive gives is looked
// for where NVRTC would look, every place looked at is recorded with what is
// there, and each file found outside the toolkit's folders is followed
// (scanned once per process: scanned_files.hpp).
#include "jitkernel/cache/include_closure.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <unordered_map>

#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/scanned_files.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::cache {
namespace {

std::string folder_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string join(const std::string& folder, const std::string& name) {
  if (folder.empty() || folder.back() == '/') return folder + name;
  return folder + "/" + name;
}

bool inside(const std::string& path, const std::string& folder) {
  if (folder.empty()) return false;
  if (folder.back() == '/') return path.compare(0, folder.size(), folder) == 0;
  return path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
         path[folder.size()] == '/';
}

class Walk {
 public:
  Walk(const IncludeSearch& search, IncludeClosure& out) : search_(search), out_(out) {}

  void source(std::string_view text) {
    const std::vector<IncludeDirective> directives = scan_includes(text);
    if (directives.empty()) return;
    for (const std::string& dir : search_.include_dirs) dirs_.push_back(absolute(dir));
    for (const std::string& dir : search_.toolkit_dirs) toolkit_.push_back(absolute(dir));
    // Relative: made absolute only if a "quoted" name is looked up there.
    follow(directives, folder_of(search_.program_name), search_.program_name, 0);
  }

 private:
  // Include depth beyond which NVRTC would have given up long before.
  static constexpr int kMaxDepth = 200;

  enum class Seen { Found, Skipped };  // Skipped: the search went on past it

  // `path` from the current folder (asked once, when first needed: paths are
  // keyed absolute, as the same relative name is another file elsewhere).
  std::string absolute(const std::string& path) {
    if (!path.empty() && path[0] == '/') return path;
    if (cwd_.empty()) {
      char buffer[4096];
      if (::getcwd(buffer, sizeof(buffer)) == nullptr || buffer[0] != '/') {
        if (out_.incomplete.empty())
          out_.incomplete = "the current folder has no name (" + errno_text(errno) +
                            "), so relative #include paths cannot be followed";
        return path;
      }
      cwd_ = buffer;
    }
    return path.empty() ? cwd_ : join(cwd_, path);
  }

  void follow(const std::vector<IncludeDirective>& directives, const std::string& folder,
              const std::string& where, int depth) {
    if (depth > kMaxDepth) {
      if (out_.incomplete.empty())
        out_.incomplete = "#include files nest deeper than " + std::to_string(kMaxDepth) + " at " + where;
      return;
    }
    for (const IncludeDirective& d : directives) {
      if (d.form == IncludeDirective::Form::Computed) {
        if (out_.incomplete.empty())
          out_.incomplete = "'" + d.name + "' in " + where + " names its file through a macro";
        continue;
      }
      if (d.name.empty()) continue;  // an error; reads nothing
      if (d.name[0] == '/') {
        look_at(d.name, depth, d, where);
        continue;
      }
      if (d.form == IncludeDirective::Form::Quoted &&
          look_at(absolute(join(folder, d.name)), depth, d, where) && !d.every_folder)
        continue;
      for (const std::string& dir : dirs_) {
        if (look_at(join(dir, d.name), depth, d, where) && !d.every_folder) break;
      }
    }
  }

  // Records `path` (absolute) and follows it when it is a file outside the
  // toolkit's folders; true when the search stops there. A FIFO, socket or
  // device where the directive `d` (in `where`) looks is a CompileError
  // naming it: NVRTC opens what it finds there and would wait on a FIFO (or
  // a terminal) forever. A folder is passed over, as NVRTC does.
  bool look_at(const std::string& path, int depth, const IncludeDirective& d, const std::string& where) {
    auto known = seen_.find(path);
    if (known != seen_.end()) return known->second == Seen::Found;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      const int error = errno;
      record(path, error == ENOENT || error == ENOTDIR ? "absent" : "unusable: " + errno_text(error),
             Seen::Skipped);
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      if (!S_ISDIR(st.st_mode)) refuse_special(path, st, d, where);
      record(path, "not a regular file", Seen::Skipped);
      return false;
    }
    for (const std::string& dir : toolkit_) {
      if (inside(path, dir)) {
        record(path, "toolkit size " + std::to_string(st.st_size), Seen::Found);
        return true;
      }
    }
    std::shared_ptr<const ScannedFile> file = scanned(path, st);
    if (!file) {
      record(path, "unusable: " + errno_text(errno), Seen::Skipped);
      return false;
    }
    record(path, file->state, Seen::Found);
    follow(file->includes, folder_of(path), path, depth + 1);
    return true;
  }

  [[noreturn]] static void refuse_special(const std::string& path, const struct stat& st, const IncludeDirective& d,
                                          const std::string& where) {
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "not a regular file";
    const bool angle = d.form == IncludeDirective::Form::Angle;
    throw CompileError("#include " + std::string(angle ? "<" : "\"") + d.name + (angle ? ">" : "\"") + " in " +
                           where + " finds '" + path + "', which is " + kind +
                           ", not a regular file: the compile is refused (NVRTC would read it, or wait on it "
                           "forever)",
                       "", "");
  }

  void record(const std::string& path, std::string state, Seen seen) {
    seen_.emplace(path, seen);
    out_.files.emplace_back(portable(path), std::move(state));
  }

  // A path inside toolkit folder i as "<toolkit i>/relative": the same toolkit installed elsewhere gives the
  // same closure (and so the same compile key).
  std::string portable(const std::string& path) const {
    for (std::size_t i = 0; i < toolkit_.size(); ++i) {
      if (inside(path, toolkit_[i])) {
        const std::size_t skip = toolkit_[i].size() + (toolkit_[i].back() == '/' ? 0 : 1);
        return "<toolkit " + std::to_string(i) + ">/" + path.substr(skip);
      }
    }
    return path;
  }

  const IncludeSearch& search_;
  IncludeClosure& out_;
  std::string cwd_;
  std::vector<std::string> dirs_;     // absolute
  std::vector<std::string> toolkit_;  // absolute
  std::unordered_map<std::string, Seen> seen_;
};

}  // namespace

IncludeClosure include_closure(std::string_view source, const IncludeSearch& search) {
  IncludeClosure out;
  Walk(search, out).source(source);
  return out;
}

}  // namespace jk::cache
