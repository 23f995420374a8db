# Chooses CMAKE_CUDA_ARCHITECTURES before the CUDA language is enabled:
#   1. the user's CMAKE_CUDA_ARCHITECTURES or CUDAARCHS, untouched;
#   2. otherwise the compute capability of the GPU(s) that nvidia-smi reports;
#   3. otherwise a fixed default, so configuring never fails on a machine with no GPU
#      (CMake's "native" is a fatal error there).
set(CML_DEFAULT_CUDA_ARCHITECTURES "75" CACHE STRING
    "CUDA architectures used when none is given and no GPU is found (75 = oldest CUDA 13 target; its PTX runs on newer GPUs)")

function(cml_pick_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
    return()
  endif()
  set(_archs "")
  find_program(CML_NVIDIA_SMI nvidia-smi)
  if(CML_NVIDIA_SMI)
    execute_process(
      COMMAND "${CML_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE _caps RESULT_VARIABLE _rc ERROR_QUIET TIMEOUT 20)
    if(_rc EQUAL 0)
      string(REPLACE "\n" ";" _caps "${_caps}")
      foreach(_cap IN LISTS _caps)
        string(STRIP "${_cap}" _cap)
        if(_cap MATCHES "^([0-9]+)\\.([0-9]+)$")
          list(APPEND _archs "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _archs)
    endif()
  endif()
  if(_archs)
    message(STATUS "CUDA architectures: ${_archs} (the GPU(s) on this machine)")
  else()
    set(_archs "${CML_DEFAULT_CUDA_ARCHITECTURES}")
    message(STATUS "CUDA architectures: ${_archs} (no GPU found; the fixed default)")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${_archs}" CACHE STRING "CUDA architectures to build for")
endfunction()
