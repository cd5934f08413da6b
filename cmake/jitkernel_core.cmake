# The core library target in one place for its two builds: this repository's cpp/CMakeLists.txt, and the
# CMake package the Python wheel ships (cmake/jitkernelConfig.cmake.in), which compiles the core's
# sources inside a user's project with the user's compiler.
#
#   jitkernel_add_core(<target> <cpp_dir> <generated_dir> <version>)
#
# cpp_dir holds jitkernel/<stage>/... and third_party/ (the vendored official headers the core includes:
# xla/ffi/api/c_api.h; cpp/third_party/README.md); generated_dir holds metal_utils_text.inc (written by
# cmake/embed_metal_utils.cmake). Sets JITKERNEL_CORE_SOURCES in the caller's scope. The Metal runtime
# (cpp/jitkernel/metal/ but metal_backend.cpp) is not in this list: CMakeLists.txt adds it on Apple.
function(jitkernel_add_core target cpp_dir generated_dir version)
  file(GLOB sources CONFIGURE_DEPENDS
       ${cpp_dir}/jitkernel/core/*.cpp
       ${cpp_dir}/jitkernel/codegen/*.cpp
       ${cpp_dir}/jitkernel/cache/*.cpp
       ${cpp_dir}/jitkernel/engine/*.cpp
       ${cpp_dir}/jitkernel/xla/*.cpp
       ${cpp_dir}/jitkernel/torch_op/*.cpp)
  # cuda/ is split by stage into subfolders (driver, nvrtc, binary, memory, toolkit, ...).
  file(GLOB_RECURSE cuda_sources CONFIGURE_DEPENDS ${cpp_dir}/jitkernel/cuda/*.cpp)
  list(APPEND sources ${cuda_sources})
  # The Metal backend's code generation and checks build everywhere.
  list(APPEND sources ${cpp_dir}/jitkernel/metal/metal_backend.cpp)
  set(JITKERNEL_CORE_SOURCES ${sources} PARENT_SCOPE)

  add_library(${target} STATIC ${sources} ${generated_dir}/metal_utils_text.inc)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${cpp_dir}>"
                                              "$<BUILD_INTERFACE:${cpp_dir}/third_party>")
  target_include_directories(${target} PRIVATE ${generated_dir})
  target_compile_definitions(${target} PUBLIC JITKERNEL_VERSION="${version}")
  # The CUDA driver and NVRTC are dlopen'ed at run time; nothing links them.
  target_link_libraries(${target} PUBLIC ${CMAKE_DL_LIBS})
  find_package(Threads REQUIRED)
  target_link_libraries(${target} PUBLIC Threads::Threads)
endfunction()
