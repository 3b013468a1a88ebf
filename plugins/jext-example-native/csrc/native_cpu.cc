// CPU handlers of jext-example-native, exposed to Python as PyCapsules.
//
// The handlers are XLA FFI functions (xla/ffi/api/ffi.h, shipped with jaxlib and found
// through jax.ffi.include_dir()); this file is also a tiny CPython extension module whose
// `handlers()` returns {target name: PyCapsule}, which the plugin's
// jext_register_ffi_targets hook hands to jext.

#include <Python.h>

#include <cmath>
#include <cstdint>

#include "kernels.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

template <typename T>
void SoftplusLoop(const T* x, T* y, int64_t n, T beta) {
  for (int64_t i = 0; i < n; ++i) y[i] = jext_native::softplus(x[i], beta);
}

// Elementwise: any shape, float32 or float64; `beta` arrives as a float32 attribute.
ffi::Error SoftplusImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, float beta) {
  const int64_t n = static_cast<int64_t>(x.element_count());
  switch (x.element_type()) {
    case ffi::F32:
      SoftplusLoop(x.typed_data<float>(), y->typed_data<float>(), n, beta);
      return ffi::Error::Success();
    case ffi::F64:
      SoftplusLoop(x.typed_data<double>(), y->typed_data<double>(), n,
                   static_cast<double>(beta));
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument(
          "jext_native_softplus: only float32 and float64 operands are supported");
  }
}

template <typename T>
void RmsNormRows(const T* x, const T* w, T* y, int64_t rows, int64_t cols, int64_t rows_per_w,
                 T eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* wr = w + (r / rows_per_w) * cols;
    T* yr = y + r * cols;
    T sum_sq = 0;
    for (int64_t c = 0; c < cols; ++c) sum_sq += xr[c] * xr[c];
    const T scale = T(1) / std::sqrt(sum_sq / static_cast<T>(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * scale * wr[c];
  }
}

// Row-wise over the last axis: y = x / rms(x) * w.  Every leading axis of x is a row
// index, and w (1-D for the primitive) may have leading axes that are a prefix of x's:
// that is how vmap's "broadcast_all" hands over a batch, in one call and no loop.
ffi::Error RmsNormImpl(ffi::AnyBuffer x, ffi::AnyBuffer w, ffi::Result<ffi::AnyBuffer> y,
                       float eps) {
  auto dims = x.dimensions();
  if (dims.size() == 0 || w.dimensions().size() == 0) {
    return ffi::Error::InvalidArgument("jext_native_rms_norm: operands must be at least 1-D");
  }
  const int64_t cols = dims.back();
  if (w.dimensions().back() != cols || x.element_type() != w.element_type()) {
    return ffi::Error::InvalidArgument(
        "jext_native_rms_norm: w must have x's last axis and dtype");
  }
  const int64_t n = static_cast<int64_t>(x.element_count());
  const int64_t rows = cols == 0 ? 0 : n / cols;
  const int64_t w_rows = cols == 0 ? 1 : static_cast<int64_t>(w.element_count()) / cols;
  if (w_rows == 0 || rows % w_rows != 0) {
    return ffi::Error::InvalidArgument(
        "jext_native_rms_norm: w's leading axes must be a prefix of x's");
  }
  const int64_t rows_per_w = rows == 0 ? 1 : rows / w_rows;
  switch (x.element_type()) {
    case ffi::F32:
      RmsNormRows(x.typed_data<float>(), w.typed_data<float>(), y->typed_data<float>(), rows,
                  cols, rows_per_w, eps);
      return ffi::Error::Success();
    case ffi::F64:
      RmsNormRows(x.typed_data<double>(), w.typed_data<double>(), y->typed_data<double>(), rows,
                  cols, rows_per_w, static_cast<double>(eps));
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument(
          "jext_native_rms_norm: only float32 and float64 operands are supported");
  }
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(JextNativeSoftplusCpu, SoftplusImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<float>("beta"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(JextNativeRmsNormCpu, RmsNormImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<float>("eps"));

// The handlers vendored from JAX's examples (jax_examples.cc).
XLA_FFI_DECLARE_HANDLER_SYMBOL(JextNativeRmsNormFwdCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(JextNativeRmsNormBwdCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(JextNativeCounterCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(JextNativeAliasingCpu);

// --- the Python module --------------------------------------------------------------------

namespace {

template <typename Fn>
PyObject* Capsule(Fn* fn) {
  // The capsule name XLA expects for FFI handlers is NULL (jax.ffi.pycapsule does the same).
  return PyCapsule_New(reinterpret_cast<void*>(fn), nullptr, nullptr);
}

bool AddHandler(PyObject* dict, const char* name, PyObject* capsule) {
  if (capsule == nullptr) return false;
  const int rc = PyDict_SetItemString(dict, name, capsule);
  Py_DECREF(capsule);
  return rc == 0;
}

PyObject* Handlers(PyObject*, PyObject*) {
  PyObject* dict = PyDict_New();
  if (dict == nullptr) return nullptr;
  if (!AddHandler(dict, "jext_native_softplus", Capsule(JextNativeSoftplusCpu)) ||
      !AddHandler(dict, "jext_native_rms_norm", Capsule(JextNativeRmsNormCpu)) ||
      !AddHandler(dict, "jext_native_rms_norm_fwd", Capsule(JextNativeRmsNormFwdCpu)) ||
      !AddHandler(dict, "jext_native_rms_norm_bwd", Capsule(JextNativeRmsNormBwdCpu)) ||
      !AddHandler(dict, "jext_native_counter", Capsule(JextNativeCounterCpu)) ||
      !AddHandler(dict, "jext_native_aliasing", Capsule(JextNativeAliasingCpu))) {
    Py_DECREF(dict);
    return nullptr;
  }
  return dict;
}

// The FFI API the handlers were compiled against (the headers' version, fixed at build
// time): XLA refuses a handler built for a newer one than the installed jaxlib's (and
// jaxlib 0.8 then cannot start its CPU backend), so the plugin checks before registering.
PyObject* FfiApiVersion(PyObject*, PyObject*) {
  return Py_BuildValue("(ii)", XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR);
}

PyMethodDef kMethods[] = {
    {"handlers", Handlers, METH_NOARGS,
     "handlers() -> {FFI target name: PyCapsule} for the CPU platform."},
    {"ffi_api_version", FfiApiVersion, METH_NOARGS,
     "ffi_api_version() -> (major, minor) of the XLA FFI headers the handlers were built with."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_native_cpu", "CPU XLA FFI handlers of jext-example-native.", -1,
    kMethods,
};

}  // namespace

PyMODINIT_FUNC PyInit__native_cpu(void) { return PyModule_Create(&kModule); }
