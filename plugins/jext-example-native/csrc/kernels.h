// The math of the native kernels, shared by the C++ (CPU) and CUDA handlers.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define JEXT_NATIVE_HD __host__ __device__
#else
#define JEXT_NATIVE_HD
#endif

namespace jext_native {

// softplus(x) = log(1 + exp(beta * x)) / beta, written so that neither exp overflows
// for large |beta * x| nor log1p loses the small tail for very negative inputs.
template <typename T>
JEXT_NATIVE_HD inline T softplus(T x, T beta) {
  T z = beta * x;
  T pos = z > T(0) ? z : T(0);
  return (pos + log1p(exp(-fabs(z)))) / beta;
}

}  // namespace jext_native
