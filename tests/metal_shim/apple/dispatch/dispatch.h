/* Stub of <dispatch/dispatch.h> (check 2, see docs/metal.md): the queue and data handle types metal-cpp
   names in signatures. Never linked. */
#pragma once
#include <stddef.h>
#include <stdint.h>
typedef struct dispatch_queue_s* dispatch_queue_t;
typedef struct dispatch_data_s* dispatch_data_t;
