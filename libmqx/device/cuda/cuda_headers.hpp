// The one way mqx includes the driver API headers. cuda.h maps
// cuGetProcAddress to cuGetProcAddress_v2 with a macro; mqx needs both
// exported names (the hook table defines a function for each), so the macro
// goes.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#undef cuGetProcAddress
// The same for the batched copies: CUDA 12.8's ABI (with failIdx) keeps the
// plain name, CUDA 13's is _v2; the hook table defines both.
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
