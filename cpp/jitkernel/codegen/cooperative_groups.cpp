// Cooperative groups without the cost of <cooperative_groups.h>: NVRTC takes
// about 2.5 s to parse that header (it pulls in CCCL), while nearly every MLX
// kernel uses it only for `cooperative_groups::this_grid().thread_rank()`.
// When the user code (body and header) touches cooperative groups only
// through this_grid() / this_thread_block() and the members below, the
// generated file defines that subset itself (same names, return types and
// values as the CUDA API); anything else, or anything we cannot be sure of,
// gets the real header.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/codegen/codegen_detail.hpp"

namespace jk::codegen {
namespace {

template <std::size_t N>
bool in(const std::string_view (&list)[N], std::string_view name) {
  for (auto s : list) {
    if (s == name) return true;
  }
  return false;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// What the light definitions provide in namespace cooperative_groups.
constexpr std::string_view kShimNames[] = {
    "this_grid", "this_thread_block", "grid_group", "thread_block", "sync", "thread_rank",
    "group_size",
};
constexpr std::string_view kGridMembers[] = {
    "size", "num_threads", "thread_rank", "block_rank", "num_blocks", "block_index",
    "dim_blocks", "group_dim", "dim_threads", "thread_index",
};
constexpr std::string_view kBlockMembers[] = {
    "size", "num_threads", "thread_rank", "sync", "group_index", "thread_index",
    "group_dim", "dim_threads",
};

// Names of the cooperative groups API that the light definitions lack:
// anywhere in the user code (qualified or not, as a member or after a
// `using namespace`), they select the real header. Common words among them
// (reduce, plus, less, greater, wait, ...) cost only compile time.
constexpr std::string_view kUnsupported[] = {
    // groups and partitions
    "thread_group", "thread_block_tile", "tiled_partition", "coalesced_group",
    "coalesced_threads", "labeled_partition", "binary_partition", "this_thread",
    "cluster_group", "this_cluster", "multi_grid_group", "this_multi_grid",
    "block_tile_memory", "details", "experimental",
    // members the light grid_group / thread_block do not have
    "is_valid", "get_type", "barrier_arrive", "barrier_wait", "arrival_token", "thread_scope",
    "dim_clusters", "num_clusters", "cluster_index", "cluster_rank", "num_grids", "grid_rank",
    // members of tiles and coalesced groups
    "meta_group_rank", "meta_group_size", "shfl", "shfl_up", "shfl_down", "shfl_xor", "ballot",
    "match_any", "match_all", "build_mask",
    // collectives, asynchronous copies, invoke
    "reduce", "reduce_store_async", "reduce_update_async", "inclusive_scan", "exclusive_scan",
    "inclusive_scan_update", "exclusive_scan_update", "plus", "less", "greater", "bit_and",
    "bit_or", "bit_xor", "memcpy_async", "wait", "wait_prior", "invoke_one",
    "invoke_one_broadcast",
};

// Macros that configure <cooperative_groups.h> or come with what it includes
// (<nv/target>, CCCL): the user code may rely on them.
constexpr std::string_view kHeaderMacroPrefixes[] = {
    "_CG_", "__CG_", "NV_", "_NV_", "_CCCL", "__cccl", "CCCL_", "_LIBCUDACXX",
};

bool shim_member(const std::string& scoped) {
  std::string_view s = scoped;
  auto member_of = [&](std::string_view type, const auto& members) {
    return starts_with(s, type) && in(members, s.substr(type.size()));
  };
  if (starts_with(s, "grid_group::")) return member_of("grid_group::", kGridMembers);
  if (starts_with(s, "thread_block::")) return member_of("thread_block::", kBlockMembers);
  return true;  // not about these types
}

constexpr const char* kShim = R"(// Cooperative groups: jitkernel's definitions of the part of the CUDA API this
// kernel uses (this_grid, this_thread_block), in place of <cooperative_groups.h>.
namespace cooperative_groups {
class thread_block;
class grid_group;
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();

// The threads of the calling thread's block; ranks run x fastest, then y, z.
class thread_block {
  friend __device__ thread_block this_thread_block();
  __device__ thread_block() {}

 public:
  static __device__ __forceinline__ void sync() { __syncthreads(); }
  static __device__ __forceinline__ unsigned int num_threads() {
    return blockDim.x * blockDim.y * blockDim.z;
  }
  static __device__ __forceinline__ unsigned int size() { return num_threads(); }
  static __device__ __forceinline__ unsigned int thread_rank() {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  }
  static __device__ __forceinline__ dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static __device__ __forceinline__ dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  static __device__ __forceinline__ dim3 dim_threads() { return dim3(blockDim.x, blockDim.y, blockDim.z); }
  static __device__ __forceinline__ dim3 group_dim() { return dim_threads(); }
};

// All threads of the launch: blocks ranked x fastest, then y, z; a thread's
// rank is its block's rank times the block size plus its rank in the block.
// (No grid-wide sync here: that needs a cooperative launch and the real header.)
class grid_group {
  friend __device__ grid_group this_grid();
  __device__ grid_group() {}

 public:
  static __device__ __forceinline__ unsigned long long num_blocks() {
    return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z;
  }
  static __device__ __forceinline__ unsigned long long block_rank() {
    return (static_cast<unsigned long long>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x +
           blockIdx.x;
  }
  static __device__ __forceinline__ unsigned long long num_threads() {
    return num_blocks() * thread_block::num_threads();
  }
  static __device__ __forceinline__ unsigned long long size() { return num_threads(); }
  static __device__ __forceinline__ unsigned long long thread_rank() {
    return block_rank() * thread_block::num_threads() + thread_block::thread_rank();
  }
  static __device__ __forceinline__ dim3 block_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static __device__ __forceinline__ dim3 dim_blocks() { return dim3(gridDim.x, gridDim.y, gridDim.z); }
  static __device__ __forceinline__ dim3 group_dim() { return dim_blocks(); }
  // In threads: the grid's extent and the calling thread's 3-D index in it.
  static __device__ __forceinline__ dim3 dim_threads() {
    return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z);
  }
  static __device__ __forceinline__ dim3 thread_index() {
    return dim3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                blockIdx.z * blockDim.z + threadIdx.z);
  }
};

__device__ __forceinline__ thread_block this_thread_block() { return thread_block(); }
__device__ __forceinline__ grid_group this_grid() { return grid_group(); }

template <class Group>
__device__ __forceinline__ void sync(const Group& g) { g.sync(); }
template <class Group>
__device__ __forceinline__ auto thread_rank(const Group& g) -> decltype(g.thread_rank()) {
  return g.thread_rank();
}
template <class Group>
__device__ __forceinline__ auto group_size(const Group& g) -> decltype(g.num_threads()) {
  return g.num_threads();
}
}  // namespace cooperative_groups
)";

}  // namespace

bool uses_cooperative_groups(const SourceScan& scan) {
  return scan.has("cooperative_groups") || scan.qualifies("cg");
}

bool cooperative_groups_shim_suffices(const SourceScan& scan) {
  // The user's own #include lines may bring in the real header (or rely on it).
  if (!scan.includes.empty()) return false;
  // `using namespace cooperative_groups;`, `namespace x = cooperative_groups;`,
  // a namespace of their own named like it...: names may reach it unqualified.
  if (scan.used_unqualifying("cooperative_groups")) return false;
  if (scan.qualifies("cg") && scan.used_unqualifying("cg")) return false;
  // The real header includes <cuda/atomic> and <nv/target>; code using those
  // namespaces or its configuration macros may depend on it.
  if (scan.qualifies("cuda") || scan.qualifies("nv")) return false;
  for (const auto& id : scan.identifiers) {
    if (in(kUnsupported, id)) return false;
    for (auto p : kHeaderMacroPrefixes) {
      if (starts_with(id, p)) return false;
    }
  }
  // grid_group::sync (cg::sync(grid), grid.sync()) needs a cooperative launch
  // and the real header; `sync` next to any grid name is taken to mean it.
  if (scan.has("sync") && (scan.has("this_grid") || scan.has("grid_group"))) return false;
  for (const auto& s : scan.scoped) {
    std::string_view v = s;
    for (std::string_view ns : {std::string_view("cooperative_groups::"), std::string_view("cg::")}) {
      if (starts_with(v, ns) && !in(kShimNames, v.substr(ns.size()))) return false;
    }
    if (!shim_member(s)) return false;
  }
  return true;
}

std::string_view cooperative_groups_shim() { return kShim; }

namespace {

// The user code as tokens: identifiers and single punctuation characters,
// whitespace dropped (one linear pass; no regular expressions, whose
// backtracking matchers recurse per character on long sources).
std::vector<std::string_view> grid_tokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t i = 0; i < text.size();) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (ident(text[i])) {
      std::size_t j = i;
      while (j < text.size() && ident(text[j])) ++j;
      tokens.push_back(text.substr(i, j - i));
      i = j;
    } else {
      tokens.push_back(text.substr(i++, 1));
    }
  }
  return tokens;
}

// Whether tokens[i..] spell `[ns ::]* this_grid (`; sets *end past the '('.
bool grid_call_at(const std::vector<std::string_view>& t, std::size_t i, std::size_t* end) {
  while (i + 2 < t.size() && t[i + 1] == ":" && t[i + 2] == ":") i += 3;  // cg:: / cooperative_groups::
  if (i + 1 < t.size() && t[i] == "this_grid" && t[i + 1] == "(") {
    *end = i + 2;
    return true;
  }
  return false;
}

bool is_word(std::string_view token) {
  return !token.empty() && (std::isalpha(static_cast<unsigned char>(token[0])) || token[0] == '_');
}

}  // namespace

bool syncs_grid(const std::string& source, const std::string& header) {
  const std::string text = header + "\n" + source;
  if (text.find("this_grid") == std::string::npos && text.find("grid_group") == std::string::npos) return false;
  const std::vector<std::string_view> t = grid_tokens(text);
  const std::size_t n = t.size();
  auto at = [&](std::size_t i, std::string_view s) { return i < n && t[i] == s; };
  std::vector<std::string_view> holders;  // variables holding the grid
  std::size_t end = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // this_grid().sync(  and  sync([ns::]this_grid(
    if (t[i] == "this_grid" && at(i + 1, "(") && at(i + 2, ")") && at(i + 3, ".") && at(i + 4, "sync") &&
        at(i + 5, "("))
      return true;
    if (t[i] == "sync" && at(i + 1, "(") && grid_call_at(t, i + 2, &end)) return true;
    // grid_group [&] g   and   g (=|(|{) [ns::]this_grid(
    if (t[i] == "grid_group") {
      std::size_t j = at(i + 1, "&") ? i + 2 : i + 1;
      if (j < n && is_word(t[j])) holders.push_back(t[j]);
    }
    if (is_word(t[i]) && (at(i + 1, "=") || at(i + 1, "(") || at(i + 1, "{")) && grid_call_at(t, i + 2, &end))
      holders.push_back(t[i]);
  }
  if (holders.empty()) return false;
  auto holds_grid = [&](std::string_view name) {
    for (std::string_view h : holders)
      if (h == name) return true;
    return false;
  };
  for (std::size_t i = 0; i < n; ++i) {
    // g.sync(   and   sync(g)
    if (holds_grid(t[i]) && at(i + 1, ".") && at(i + 2, "sync") && at(i + 3, "(")) return true;
    if (t[i] == "sync" && at(i + 1, "(") && i + 2 < n && holds_grid(t[i + 2]) && at(i + 3, ")")) return true;
  }
  return false;
}

}  // namespace jk::codegen
