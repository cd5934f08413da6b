// The cache folder on disk: where it is (environment and platform
// conventions) and whether it is safe to use (a private folder of this user;
// for a read-only tier, a folder only its owner may write to).
#pragma once

#include <string>

namespace jk::cache {

// $JITKERNEL_CACHE_DIR (made absolute against the working directory), else
// $XDG_CACHE_HOME/jitkernel (when absolute) or $HOME/.cache/jitkernel on
// Linux, $HOME/Library/Caches/jitkernel on macOS. HOME falls back to the
// password database. Empty when no home folder can be found.
std::string directory_from_environment();

// Whether the last component of a folder's path may be a symbolic link: the
// configured folder may (the user chose it), a subfolder inside it may not
// (the cache never follows a link out of its folder).
enum class LinkPolicy { Follow, Refuse };

// Makes `path` a usable private folder: creates it and missing parents with
// mode 0700 when `create`, then checks that it is a directory (not a link,
// with LinkPolicy::Refuse) owned by this user and not writable by group or
// others. Returns "" when usable, else why not ("owned by uid 0, not by this
// user (uid 1000)", "cannot create it: Read-only file system", ...).
std::string prepare_private_folder(const std::string& path, bool create,
                                   LinkPolicy links = LinkPolicy::Follow);

// Whether `path` may be read as a read-only tier (tiers.hpp): a directory
// (not a link, with LinkPolicy::Refuse) that neither its group nor others may
// write to; any owner. Returns "" when it may, else why not.
std::string check_readonly_folder(const std::string& path, LinkPolicy links);

// `path` made absolute against the working directory.
std::string absolute_path(const std::string& path);

}  // namespace jk::cache
