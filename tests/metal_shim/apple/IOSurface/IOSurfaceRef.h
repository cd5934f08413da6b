/* Stub of <IOSurface/IOSurfaceRef.h> (check 2, see docs/metal.md): the opaque surface handle metal-cpp names
   in texture signatures. Never linked. */
#pragma once
typedef struct __IOSurface* IOSurfaceRef;
