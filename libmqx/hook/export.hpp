// The C entry points libmqx.so exports. Everything else in the library is
// hidden (-fvisibility=hidden), so that only these can interpose.
#pragma once

#define MQX_EXPORT extern "C" __attribute__((visibility("default")))
