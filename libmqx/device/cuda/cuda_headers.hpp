// The one way mqx includes the driver API headers. cuda.h maps
// cuGetProcAddress to cuGetProcAddress_v2 with a macro; mqx needs both
// exported names (the hook table defines a function for each), so the macro
// goes.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#undef cuGetProcAddress
