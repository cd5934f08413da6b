// NVRTC, loaded at run time by path (toolkit/toolkit_provider.hpp says
// which). Declares the few entry points jitkernel uses; nothing links libnvrtc.
#pragma once

#include <cstddef>
#include <utility>

namespace jk::cuda {

using nvrtcResult = int;
typedef struct _nvrtcProgram* nvrtcProgram;
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;
inline constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcGetSupportedArchs)(int*);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
};

// Loads NVRTC from toolkit_paths() once. Throws CudaNotAvailable naming the
// path tried and how to install NVRTC (`pip install "jitkernel[cuda]"`, set
// JITKERNEL_NVRTC_PATH, or CUDA_HOME).
const NvrtcApi& nvrtc();

// (major, minor) of the loaded NVRTC.
std::pair<int, int> nvrtc_version();

}  // namespace jk::cuda
