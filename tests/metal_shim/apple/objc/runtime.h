/* Stub of <objc/runtime.h> for checking jitkernel's Metal backend on Linux (check 2, see docs/metal.md):
   only the types and functions metal-cpp refers to, declared so that the code type-checks. Never linked. */
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct objc_class* Class;
struct objc_object {
  Class isa;
};
typedef struct objc_object* id;
typedef struct objc_selector* SEL;
typedef struct objc_object Protocol;
typedef void (*IMP)(void);
typedef signed char BOOL;

SEL sel_registerName(const char* name);
const char* sel_getName(SEL sel);
Class objc_lookUpClass(const char* name);
Protocol* objc_getProtocol(const char* name);
#ifdef __cplusplus
}
#endif
