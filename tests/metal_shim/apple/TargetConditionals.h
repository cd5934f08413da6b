/* Stub of <TargetConditionals.h> (check 2, see docs/metal.md): says "macOS", so that metal-cpp takes the
   branches a Mac build takes; and the deployment target a macOS 14 build has. */
#pragma once
#define TARGET_OS_MAC 1
#define TARGET_OS_OSX 1
#define TARGET_OS_IPHONE 0
#define TARGET_OS_IOS 0
#define TARGET_OS_TV 0
#define TARGET_OS_WATCH 0
#define TARGET_OS_SIMULATOR 0
#ifndef __MAC_OS_X_VERSION_MIN_REQUIRED
#define __MAC_OS_X_VERSION_MIN_REQUIRED 140000
#endif
