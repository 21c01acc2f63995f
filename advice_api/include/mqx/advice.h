/*
 * mqx access advice (docs/architecture.md decision 6).
 *
 * cudaAdvice names a region the calling thread's NEXT kernel launch touches
 * and how, so that mqx loads only what the kernel reads and does not write
 * back what it will overwrite:
 *
 *   cudaAdvice(input, MQX_ADVICE_INPUT);     // read: loaded before the launch
 *   cudaAdvice(output, MQX_ADVICE_OUTPUT);   // written only: backed, not loaded
 *   myKernel<<<grid, block>>>(input, output);
 *
 * Advice applies to the whole region (allocation) holding devicePtr and is
 * consumed by the next launch of the same thread. Without libmqx loaded (the
 * program runs natively) every call is a no-op that returns 0, so programs
 * can call it unconditionally. Usable from C and C++.
 */
#ifndef MQX_ADVICE_H
#define MQX_ADVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MQX_ADVICE_INPUT 1
#define MQX_ADVICE_OUTPUT 2
#define MQX_ADVICE_BOTH 3

/*
 * Returns 0 on success; 1 (CUDA_ERROR_INVALID_VALUE) when flags is not one
 * of the three values above, or when libmqx manages this process and
 * devicePtr lies in no region it manages.
 */
int cudaAdvice(const void* devicePtr, int flags);

/*
 * Declares one operator of the running query's plan to mqxd's admission
 * control (MultiQx-GPU §5): it is expected to run expected_seconds (any
 * positive unit, the same for every operator of the query) and to use
 * device_bytes of device memory. After each call mqxd counts the query with
 * the weighted demand sum(t*m)/sum(t) and the peak demand max(m) of the
 * operators declared so far, and reconsiders postponed queries. Returns 0
 * on success, and when the process runs natively or without mqxd; 1 when
 * expected_seconds is not positive and finite.
 */
int mqx_declare_operator(double expected_seconds, size_t device_bytes);

/*
 * Declares a kernel resizable (docs/architecture.md decision 11): written with a
 * grid-stride loop over x, so that it computes the same result with any
 * one-dimensional grid and block size. When mqxd runs, its launches then
 * get the launch optimizer's grid and block size while kernels of several
 * queries share the GPU; every other kernel keeps its own. `function` is the
 * kernel's CUfunction or CUkernel (driver API) or the cudaFunction_t of
 * cudaGetFuncBySymbol or the cudaKernel_t of cudaGetKernel (runtime API);
 * `name` is its name as cuFuncGetName reports it (mangled for C++), as in
 * the configuration's kernelopt.resizable_kernels.
 *
 * Returns 0 on success (and without libmqx loaded); 1
 * (CUDA_ERROR_INVALID_VALUE) for a null handle or an empty name.
 */
int mqx_declare_resizable(const void* function);
int mqx_declare_resizable_name(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* MQX_ADVICE_H */
