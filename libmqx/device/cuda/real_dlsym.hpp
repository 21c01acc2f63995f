// The C library's own dlsym. libmqx.so interposes dlsym (so that a program
// that looks a driver function up in libcuda gets the hook); everything inside
// mqx that needs a real symbol goes through realDlsym instead, so that it can
// never receive one of its own hooks.
#pragma once

namespace mqx::device::cuda {

// Same contract as dlsym(3). Returns nullptr (and sets nothing) when the C
// library's dlsym itself cannot be found, which cannot happen with glibc.
void* realDlsym(void* handle, const char* name) noexcept;

} // namespace mqx::device::cuda
