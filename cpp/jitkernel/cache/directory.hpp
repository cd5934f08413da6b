// The cache folder on disk: where it is (environment and platform
// conventions) and whether it is safe to use (a private folder of this user;
// for a read-only tier, a folder only its owner may write to), opened so that
// what was vetted is what is used afterwards.
//
// Another local user must not be able to put a folder of theirs in place of
// one we vetted. So a folder is reached by walking its path from "/" one
// component at a time (openat without following links, a link read from a
// folder that passed the checks and followed from there), and every folder
// passed on the way must be owned by root or this user (or, for a tier, the
// tier's owner) and be writable by neither group nor others unless it has
// the sticky bit (as /tmp has: others may not rename what is ours there).
// The opened folder is kept: the cache works relative to its descriptor, so
// a rename of the path after the checks changes nothing for this process.
#pragma once

#include <sys/types.h>

#include <string>

#include "jitkernel/cache/file_io.hpp"

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

// Opens the private folder `path` (absolute): walks it from "/" as above
// (folders on the way owned by root or this user, not writable by group or
// others unless sticky), creating missing folders with mode 0700 when
// `create` (only inside folders that passed), then checks that it is a
// directory (not a link, with LinkPolicy::Refuse) owned by this user and
// not writable by group or others. Returns "" with `folder` holding it
// open, else why not ("its parent /tmp/x is writable by others (mode 777)
// without the sticky bit: ...", "owned by uid 0, not by this user (uid
// 1000)", "cannot create /a/b: Read-only file system", ...).
std::string open_private_folder(const std::string& path, bool create, LinkPolicy links,
                                Fd& folder);

// open_private_folder without keeping the folder open (claims.cpp).
std::string prepare_private_folder(const std::string& path, bool create,
                                   LinkPolicy links = LinkPolicy::Follow);

// The subfolder `name` of a private folder held open as `parent`: created
// with mode 0700 when missing and `create`, never a link, owned by this user
// and private. "" with `folder` holding it open, else why not.
std::string open_private_subfolder(int parent, const char* name, bool create, Fd& folder);

// Why the private folder held open as `folder` is no longer private (""
// when it is): re-checked where it is used.
std::string private_folder_problem(int folder);

// Opens the read-only tier `path` (absolute; the last component may be a
// link) and its subfolder `entries` (not a link): folders on the way owned
// by root, this user or the tier's owner, writable by neither group nor
// others unless sticky; the tier and `entries` directories neither its
// group nor others may write to, `entries` owned by root, this user or the
// tier's owner. "" with `folder` holding `entries` open, else why not.
std::string open_readonly_tier(const std::string& path, const char* entries, Fd& folder);

// Opens the read-only file `path` (absolute; a cache bundle named as a
// tier): its folder vetted as a tier's (the folders on the way and the folder
// itself writable by neither group nor others), the file itself not a link,
// a regular file neither its group nor others may write to, owned by root,
// this user or the folder's owner. "" with `file` holding it open, else why
// not.
std::string open_readonly_file(const std::string& path, Fd& file);

// Whether a file or folder owned by `uid` inside a vetted folder owned by
// `folder_owner` may be trusted: root's, this user's or that owner's.
bool trusted_owner(uid_t uid, uid_t folder_owner);

// `path` made absolute against the working directory.
std::string absolute_path(const std::string& path);

}  // namespace jk::cache
