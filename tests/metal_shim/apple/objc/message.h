/* Stub of <objc/message.h> (check 2, see docs/metal.md): the message-send entry points metal-cpp casts to
   typed function pointers. As in Apple's strict prototypes, they take and return nothing. Never linked. */
#pragma once
#include <objc/runtime.h>
#ifdef __cplusplus
extern "C" {
#endif
void objc_msgSend(void);
void objc_msgSend_stret(void);
void objc_msgSend_fpret(void);
#ifdef __cplusplus
}
#endif
