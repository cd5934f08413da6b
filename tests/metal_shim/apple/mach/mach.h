/* Stub of <mach/mach.h> (check 2, see docs/metal.md): the Mach types metal-cpp names in resource
   signatures. Never linked. */
#pragma once
typedef int kern_return_t;
typedef unsigned int mach_port_t;
typedef mach_port_t task_id_token_t;
