// The one translation unit that instantiates metal-cpp's private tables
// (Objective-C class and selector lookups, weak-linked constants), as
// metal-cpp requires of exactly one file per library.
#define NS_PRIVATE_IMPLEMENTATION
#define MTL_PRIVATE_IMPLEMENTATION
#include "jitkernel/metal/metal_cpp.hpp"
