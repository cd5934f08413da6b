/* Stub of <CoreFoundation/CoreFoundation.h> (check 2, see docs/metal.md): the few CoreFoundation types and
   functions metal-cpp refers to (time intervals, constant strings) plus the headers the real one brings in
   and metal-cpp relies on (INFINITY from <math.h>; dispatch_queue_t, which the macOS 15 metal-cpp uses
   without including <dispatch/dispatch.h>). Never linked. */
#pragma once
#include <dispatch/dispatch.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef double CFTimeInterval;
typedef signed long CFIndex;
typedef const void* CFTypeRef;
typedef const struct __CFString* CFStringRef;
CFStringRef __CFStringMakeConstantString(const char* cStr);
void CFRelease(CFTypeRef cf);
CFTypeRef CFRetain(CFTypeRef cf);
#ifdef __cplusplus
}
#endif
