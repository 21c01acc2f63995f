# mqx_enable_cuda_language(): for the directories that compile kernels. nvcc
# from the toolkit that was found, Hopper (sm_90) unless the caller chose, and
# C++17 for the .cu sources (CMake 3.25 knows no C++20 flag for nvcc). A macro,
# so that the settings land in the calling directory's scope.
macro(mqx_enable_cuda_language)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endmacro()
