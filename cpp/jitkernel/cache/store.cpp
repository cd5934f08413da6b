// The lookup order of store.hpp, and what read-only stores answer a store.
#include "jitkernel/cache/store.hpp"

#include <cerrno>

namespace jk::cache {

Write Store::store(const Key&, EntryKind, std::string_view, const char** what, int* error) {
  *what = "storing into a read-only store";
  *error = errno = EROFS;
  return Write::Failed;
}

const Store* find(const std::vector<const Store*>& stores, const Key& key, EntryKind kind, std::uint64_t max_bytes,
                  std::string& payload, bool& bad) {
  for (const Store* store : stores) {
    if (!store->usable()) continue;
    const Read read = store->load(key, kind, max_bytes, payload);
    bad = bad || read == Read::Bad;
    if (read == Read::Hit) return store;
  }
  return nullptr;
}

}  // namespace jk::cache
