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

# mqx_add_cubin(TARGET SOURCE OUTPUT): builds the kernels of SOURCE into the
# cubin OUTPUT (Hopper, sm_90) with the toolkit's nvcc, for a program that
# loads them with cuModuleLoad; TARGET is the custom target that builds it
# (add_dependencies of the program on it).
function(mqx_add_cubin target source output)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -cubin -O3 -arch=sm_90 -o ${output} ${source}
    DEPENDS ${source}
    COMMENT "Building ${output}")
  add_custom_target(${target} ALL DEPENDS ${output})
endfunction()
