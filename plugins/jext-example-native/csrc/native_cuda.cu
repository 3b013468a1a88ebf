// CUDA handlers of jext-example-native: a plain shared library (no Python in it), loaded
// with ctypes by the plugin's jext_register_ffi_targets hook.  Built only where nvcc exists.

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int kThreads = 256;
// Resident blocks per SM a launch asks for: 8 x 256 threads fill an SM (2048 threads on
// sm_80 and sm_90); the threads then loop over the rest of the array (grid-stride).
constexpr int kBlocksPerSm = 8;

// Blocks for `items` work items: one per item up to a full device, no more.
int64_t Blocks(int64_t items) {
  int64_t blocks = (items + kThreads - 1) / kThreads;
  int device = 0;
  int sms = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
      sms > 0) {
    const int64_t full = int64_t(sms) * kBlocksPerSm;
    if (blocks > full) blocks = full;
  } else if (blocks > 65535) {
    blocks = 65535;
  }
  return blocks < 1 ? 1 : blocks;
}

template <typename T>
__global__ void SoftplusKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, T beta) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    y[i] = jext_native::softplus(x[i], beta);
  }
}

// float32, four values per load and store (16-byte accesses); the last n % 4 values by
// the first threads of block 0.
__global__ void SoftplusKernelF32x4(const float* __restrict__ x, float* __restrict__ y,
                                    int64_t n, float beta) {
  const int64_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    float4 v = x4[i];
    v.x = jext_native::softplus(v.x, beta);
    v.y = jext_native::softplus(v.y, beta);
    v.z = jext_native::softplus(v.z, beta);
    v.w = jext_native::softplus(v.w, beta);
    y4[i] = v;
  }
  const int64_t tail = 4 * n4 + threadIdx.x;
  if (blockIdx.x == 0 && tail < n) y[tail] = jext_native::softplus(x[tail], beta);
}

template <typename T>
void LaunchSoftplus(cudaStream_t stream, const T* x, T* y, int64_t n, T beta) {
  if (n == 0) return;
  SoftplusKernel<T><<<static_cast<unsigned>(Blocks(n)), kThreads, 0, stream>>>(x, y, n, beta);
}

template <>
void LaunchSoftplus<float>(cudaStream_t stream, const float* x, float* y, int64_t n,
                           float beta) {
  if (n == 0) return;
  const bool aligned =
      (reinterpret_cast<uintptr_t>(x) % 16 == 0) && (reinterpret_cast<uintptr_t>(y) % 16 == 0);
  if (!aligned) {  // XLA's buffers are aligned; a sliced view might not be
    SoftplusKernel<float><<<static_cast<unsigned>(Blocks(n)), kThreads, 0, stream>>>(x, y, n,
                                                                                    beta);
    return;
  }
  const int64_t items = n / 4 > 0 ? n / 4 : 1;
  SoftplusKernelF32x4<<<static_cast<unsigned>(Blocks(items)), kThreads, 0, stream>>>(x, y, n,
                                                                                     beta);
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
                                  .Attr<float>("beta"),
                              // Launches on XLA's stream and nothing else: XLA may put
                              // the call in a CUDA graph with the kernels around it.
                              {ffi::Traits::kCmdBufferCompatible});
}
