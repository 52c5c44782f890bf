//===- HostDevice.h - host and CUDA device functions (private) --*- C++ -*-===//
//
// TESSERA_RT_HOST_DEVICE marks the inline functions of common/ that CUDA
// kernels call as well as host code: __host__ __device__ under nvcc,
// nothing for the C++ compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_HOSTDEVICE_H
#define TESSERA_RUNTIME_COMMON_HOSTDEVICE_H

#ifdef __CUDACC__
#define TESSERA_RT_HOST_DEVICE __host__ __device__
#else
#define TESSERA_RT_HOST_DEVICE
#endif

#endif // TESSERA_RUNTIME_COMMON_HOSTDEVICE_H
