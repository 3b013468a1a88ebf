/* Copyright 2024 The JAX Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
==============================================================================*/

// Handlers from JAX's examples/ffi (jax-v0.10.2, src/jax_ffi_example/rms_norm.cc and
// cpu_examples.cc): the stateful counter, the aliasing check and the RMS norm with
// residuals and its backward pass, as CPU FFI targets of jext-example-native.
//
// Changes from JAX's files: the handler symbols are renamed (JextNative...), the nanobind
// modules are dropped (native_cpu.cc hands the handlers to Python), the element types
// are float32 and float64 only (the primitives' jnp references define real RMS norms),
// and the rms_norm handler without residuals is left out (native.rms_norm has its own).

#include <cmath>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// --- rms_norm_fwd / rms_norm_bwd ---------------------------------------------------------

// y = x * scale over one row of `size`; returns scale = 1 / sqrt(mean(x^2) + eps).
template <typename T>
T ComputeRmsNorm(float eps, int64_t size, const T *x, T *y) {
  T sm = static_cast<T>(0);
  for (int64_t n = 0; n < size; ++n) {
    sm += x[n] * x[n];
  }
  T scale = static_cast<T>(1) / std::sqrt(sm / static_cast<T>(size) + static_cast<T>(eps));
  for (int64_t n = 0; n < size; ++n) {
    y[n] = x[n] * scale;
  }
  return scale;
}

// Every leading axis is a batch axis: the element count and the last axis' size.
std::pair<int64_t, int64_t> GetDims(const ffi::AnyBuffer buffer) {
  const ffi::AnyBuffer::Dimensions dims = buffer.dimensions();
  if (dims.size() == 0) {
    return std::make_pair(0, 0);
  }
  return std::make_pair(buffer.element_count(), dims.back());
}

#define JEXT_NATIVE_REAL_DISPATCH(element_type, fn, ...)                          \
  switch (element_type) {                                                         \
    case ffi::F32:                                                                \
      return fn<float>(__VA_ARGS__);                                              \
    case ffi::F64:                                                                \
      return fn<double>(__VA_ARGS__);                                             \
    default:                                                                      \
      return ffi::Error::InvalidArgument("only float32 and float64 are supported"); \
  }

template <typename T>
ffi::Error RmsNormFwdImpl(int64_t totalSize, int64_t lastDim, float eps, ffi::AnyBuffer x,
                          ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> res) {
  T *x_data = x.typed_data<T>();
  T *y_data = y->typed_data<T>();
  T *res_data = res->typed_data<T>();
  for (int64_t n = 0, idx = 0; n < totalSize; n += lastDim, ++idx) {
    res_data[idx] = ComputeRmsNorm(eps, lastDim, x_data + n, y_data + n);
  }
  return ffi::Error::Success();
}

ffi::Error RmsNormFwdDispatch(float eps, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                              ffi::Result<ffi::AnyBuffer> res) {
  auto [totalSize, lastDim] = GetDims(x);
  if (lastDim == 0) {
    return ffi::Error::InvalidArgument("RmsNormFwd input must be an array");
  }
  JEXT_NATIVE_REAL_DISPATCH(x.element_type(), RmsNormFwdImpl, totalSize, lastDim, eps, x, y,
                            res);
}

template <typename T>
void ComputeRmsNormBwd(int64_t size, T res, const T *x, const T *ct_y, T *ct_x) {
  T ct_res = static_cast<T>(0);
  for (int64_t n = 0; n < size; ++n) {
    ct_res += x[n] * ct_y[n];
  }
  T factor = ct_res * res * res * res / static_cast<T>(size);
  for (int64_t n = 0; n < size; ++n) {
    ct_x[n] = res * ct_y[n] - factor * x[n];
  }
}

template <typename T>
ffi::Error RmsNormBwdImpl(int64_t totalSize, int64_t lastDim, ffi::AnyBuffer res,
                          ffi::AnyBuffer x, ffi::AnyBuffer ct_y,
                          ffi::Result<ffi::AnyBuffer> ct_x) {
  T *res_data = res.typed_data<T>();
  T *x_data = x.typed_data<T>();
  T *ct_y_data = ct_y.typed_data<T>();
  T *ct_x_data = ct_x->typed_data<T>();
  for (int64_t n = 0, idx = 0; n < totalSize; n += lastDim, ++idx) {
    ComputeRmsNormBwd(lastDim, res_data[idx], x_data + n, ct_y_data + n, ct_x_data + n);
  }
  return ffi::Error::Success();
}

ffi::Error RmsNormBwdDispatch(ffi::AnyBuffer res, ffi::AnyBuffer x, ffi::AnyBuffer ct_y,
                              ffi::Result<ffi::AnyBuffer> ct_x) {
  auto [totalSize, lastDim] = GetDims(x);
  if (lastDim == 0) {
    return ffi::Error::InvalidArgument("RmsNormBwd inputs must be arrays");
  }
  JEXT_NATIVE_REAL_DISPATCH(x.element_type(), RmsNormBwdImpl, totalSize, lastDim, res, x,
                            ct_y, ct_x);
}

// --- counter -----------------------------------------------------------------------------

// State kept between calls: the number of earlier calls with each index (0 on the first).
ffi::Error CounterImpl(int64_t index, ffi::ResultBufferR0<ffi::S32> out) {
  static std::mutex mutex;
  static auto &cache = *new std::unordered_map<int64_t, int32_t>();
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(index);
    if (it != cache.end()) {
      out->typed_data()[0] = ++it->second;
    } else {
      cache.insert({index, 0});
      out->typed_data()[0] = 0;
    }
  }
  return ffi::Error::Success();
}

// --- aliasing ----------------------------------------------------------------------------

// Checks that XLA handed the output in the input's buffer (input_output_aliases={0: 0}).
ffi::Error AliasingImpl(ffi::AnyBuffer input, ffi::Result<ffi::AnyBuffer> output) {
  if (input.element_type() != output->element_type() ||
      input.element_count() != output->element_count()) {
    return ffi::Error::InvalidArgument("The input and output data types and sizes must match.");
  }
  if (input.untyped_data() != output->untyped_data()) {
    return ffi::Error::InvalidArgument(
        "When aliased, the input and output buffers should point to the same data.");
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(JextNativeRmsNormFwdCpu, RmsNormFwdDispatch,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Ret<ffi::AnyBuffer>()  // y
                                  .Ret<ffi::AnyBuffer>()  // res
);

XLA_FFI_DEFINE_HANDLER_SYMBOL(JextNativeRmsNormBwdCpu, RmsNormBwdDispatch,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()  // res
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Arg<ffi::AnyBuffer>()  // ct_y
                                  .Ret<ffi::AnyBuffer>()  // ct_x
);

XLA_FFI_DEFINE_HANDLER_SYMBOL(JextNativeCounterCpu, CounterImpl,
                              ffi::Ffi::Bind().Attr<int64_t>("index").Ret<ffi::BufferR0<ffi::S32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(JextNativeAliasingCpu, AliasingImpl,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
