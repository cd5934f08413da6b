# Install rules of the C++ API's CMake package (find_package(jitkernel) -> jitkernel::core), included
# by CMakeLists.txt after the core library target exists. Two forms:
#  - `cmake --install` (no SKBUILD): the headers under include/ (jitkernel/, and the vendored XLA FFI
#    header jitkernel/xla/ffi_abi.hpp includes under jitkernel_third_party/, an include folder of the
#    target of its own), the static library under lib/, and the package (jitkernelConfig.cmake importing
#    jitkernelTargets.cmake) under lib/cmake/jitkernel.
#  - a wheel (scikit-build-core sets SKBUILD): under the Python package jitkernel/, the headers and the
#    core's sources (cpp/), the vendored XLA FFI header with its licence (cpp/third_party/xla/), the
#    generated metal_utils text (cpp/generated/) and a package (cmake/) that
#    compiles them inside the user's project with the user's compiler. A prebuilt library would carry
#    the C++ standard library ABI of the compiler that built the wheel (libc++ for the PyPI wheels),
#    which a program built with g++ and libstdc++ cannot link; nanobind ships its sources the same way.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

if(SKBUILD)
  set(JITKERNEL_PACKAGE_FORM sources)
  set(JITKERNEL_CMAKE_DEST jitkernel/cmake)
  # Relative to JITKERNEL_CMAKE_DEST's parent (configure_package_config_file makes them relocatable).
  set(JITKERNEL_CPP_DIR jitkernel/cpp)
  set(JITKERNEL_GENERATED_DIR jitkernel/cpp/generated)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/cpp/jitkernel DESTINATION ${JITKERNEL_CPP_DIR}
          FILES_MATCHING PATTERN "*.hpp")
  # The core's vendored headers (jitkernel_add_core puts cpp/third_party on the include path), with their
  # LICENSE and README. DLPack's header is the extension's alone: the package has no use for it.
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/cpp/third_party/xla DESTINATION ${JITKERNEL_CPP_DIR}/third_party)
  foreach(source IN LISTS JITKERNEL_CORE_SOURCES)
    file(RELATIVE_PATH relative ${CMAKE_CURRENT_SOURCE_DIR}/cpp ${source})
    get_filename_component(folder ${relative} DIRECTORY)
    install(FILES ${source} DESTINATION ${JITKERNEL_CPP_DIR}/${folder})
  endforeach()
  install(FILES ${JITKERNEL_METAL_UTILS_INC} DESTINATION ${JITKERNEL_GENERATED_DIR})
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/cmake/jitkernel_core.cmake DESTINATION ${JITKERNEL_CMAKE_DEST})
else()
  set(JITKERNEL_PACKAGE_FORM library)
  set(JITKERNEL_CMAKE_DEST ${CMAKE_INSTALL_LIBDIR}/cmake/jitkernel)
  set(JITKERNEL_CPP_DIR ${CMAKE_INSTALL_INCLUDEDIR})
  set(JITKERNEL_GENERATED_DIR ${CMAKE_INSTALL_INCLUDEDIR})  # unused by the library form
  set_target_properties(jitkernel_core PROPERTIES EXPORT_NAME core)
  target_include_directories(jitkernel_core PUBLIC "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>"
                                                    "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/jitkernel_third_party>")
  # Every header: the public ones (engine/kernel.hpp, cuda/launch/precompiled_kernel.hpp, ...) include
  # most of the others, and tests/cpu/test_cpp_api_package.py checks the include closure.
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/cpp/jitkernel DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp")
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/cpp/third_party/xla
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/jitkernel_third_party)
  install(TARGETS jitkernel_core EXPORT jitkernelTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT jitkernelTargets NAMESPACE jitkernel:: DESTINATION ${JITKERNEL_CMAKE_DEST})
endif()

configure_package_config_file(
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/jitkernelConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/package/jitkernelConfig.cmake
  INSTALL_DESTINATION ${JITKERNEL_CMAKE_DEST}
  PATH_VARS JITKERNEL_CPP_DIR JITKERNEL_GENERATED_DIR)
# 0.x releases may change the API: SameMajorVersion would accept any 0.y for 0.x, so below 1.0 a
# request must match major and minor.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(JITKERNEL_COMPATIBILITY SameMinorVersion)
else()
  set(JITKERNEL_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/package/jitkernelConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${JITKERNEL_COMPATIBILITY})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/package/jitkernelConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/package/jitkernelConfigVersion.cmake
        DESTINATION ${JITKERNEL_CMAKE_DEST})
