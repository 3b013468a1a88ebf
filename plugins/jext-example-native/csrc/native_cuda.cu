// CUDA handlers of jext-example-native: a plain shared library (no Python in it), loaded
// with ctypes by the plugin's jext_register_ffi_targets hook.  Built only where nvcc exists.

#include <cstdint>

#include "kernels.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void SoftplusKernel(const T* x, T* y, int64_t n, T beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    y[i] = jext_native::softplus(x[i], beta);
  }
}

template <typename T>
void LaunchSoftplus(cudaStream_t stream, const T* x, T* y, int64_t n, T beta) {
  if (n == 0) return;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535 * 32) blocks = 65535 * 32;  // a grid-stride loop covers the rest
  SoftplusKernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n, beta);
}

ffi::Error SoftplusCuda(cudaStream_t stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                        float beta) {
  const int64_t n = static_cast<int64_t>(x.element_count());
  switch (x.element_type()) {
    case ffi::F32:
      LaunchSoftplus(stream, x.typed_data<float>(), y->typed_data<float>(), n, beta);
      break;
    case ffi::F64:
      LaunchSoftplus(stream, x.typed_data<double>(), y->typed_data<double>(), n,
                     static_cast<double>(beta));
      break;
    default:
      return ffi::Error::InvalidArgument(
          "jext_native_softplus: only float32 and float64 operands are supported");
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

}  // namespace

extern "C" {
XLA_FFI_DEFINE_HANDLER_SYMBOL(JextNativeSoftplusCuda, SoftplusCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<float>("beta"));
}
