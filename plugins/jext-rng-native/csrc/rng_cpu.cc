// Multi-threaded CPU XLA FFI handlers for jext's bundled generators' random_bits.
//
// One handler per generator, `jext_rng_<name>_bits(key_data) -> bits`, attribute
// `bit_width`.  key_data is uint32[*batch, L]; bits is uint{8,16,32,64}[*batch, *shape]
// (uint32 for a 64-bit request without x64: then the low halves of the 64-bit values).
// Each key's output is the first bytes of its stream, which is what the XLA path reads
// too (little-endian words, C order).  The blocks of all keys are split into contiguous
// ranges, one per thread; block b of a key is computed from the key's counter plus b, so
// the result does not depend on the split.  This file is also a tiny CPython extension
// module whose `handlers()` returns {target name: PyCapsule}, `max_threads()` the
// thread count a large call uses and `ffi_api_version()` the FFI API it was built against.

#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <sys/mman.h>

#include "generators.h"
#include "generators_avx2.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace jext_rng {
namespace {

// Below this many bytes of output a call stays on the calling thread: starting threads
// costs more than it saves.
constexpr int64_t kMinBytesPerThread = 1 << 16;

// Output of at least this many bytes is backed by transparent huge pages where the
// kernel offers them on request (THP "madvise" mode, the common default); numpy advises
// its own arrays from the same size on.
constexpr int64_t kHugePageAdviceBytes = int64_t{4} << 20;

// Whether an environment switch read at each call is set to "0".
bool SwitchedOff(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "0") == 0;
}

// Asks the kernel to back the whole 2 MiB pages inside [out, out + bytes) with huge pages
// before the first write.  XLA allocates a fresh output buffer per call, and a large one
// is a fresh mapping: first touches of its 4 KiB pages (one page fault each, expensive in
// a virtual machine) cost more than computing the bits.  Only pages entirely inside the
// buffer are advised, so no other allocation is affected; failure is harmless.
// JEXT_RNG_HUGE_PAGES=0 (read at each call) leaves the buffer alone: where the host takes
// free memory back from a virtual machine, huge pages freed a while ago come back cold, and
// their first touch costs more than 4 KiB pages' would (docs/rng.md).
void AdviseHugePages(unsigned char* out, int64_t bytes) {
  if (bytes < kHugePageAdviceBytes || SwitchedOff("JEXT_RNG_HUGE_PAGES")) return;
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t first = reinterpret_cast<uintptr_t>(out);
  const uintptr_t begin = (first + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (first + static_cast<uintptr_t>(bytes)) & ~(kHuge - 1);
#ifdef MADV_HUGEPAGE
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

// The cores this process may run on, capped by JEXT_RNG_THREADS (a positive integer).
int MaxThreads() {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  cores = std::max(cores, 1);
  if (const char* cap = std::getenv("JEXT_RNG_THREADS")) {
    const long n = std::strtol(cap, nullptr, 10);
    if (n > 0) cores = static_cast<int>(std::min<long>(n, cores));
  }
  return cores;
}

// The block groups of the baseline instruction set, whichever CPU runs them.
struct Portable {
  template <typename Gen>
  JEXT_RNG_INLINE static void Group(const Gen& gen, u64 first, unsigned char* out) {
    gen.Group(first, out);
  }
};

#ifdef JEXT_RNG_HAVE_AVX2
// The block groups of generators_avx2.h.  Not inlined into FillRangeBody: GCC inlines
// AVX2 code only into functions compiled for AVX2, and one call per group costs nothing.
struct Avx2 {
  template <typename Gen>
  __attribute__((target("avx2"))) static void Group(const Gen& gen, u64 first, unsigned char* out) {
    avx2::Group(gen, first, out);
  }
};
#endif

// Writes bytes [begin, end) of the concatenation of every key's first `key_bytes` stream
// bytes.  Whole groups of blocks go straight to `out`; a group that crosses a key's end
// or the range's edges goes through a buffer.
template <typename Gen, typename Isa>
JEXT_RNG_INLINE void FillRangeBody(const u32* keys, unsigned char* out, int64_t key_bytes,
                                   int64_t begin, int64_t end) {
  constexpr int64_t kGroupBytes = static_cast<int64_t>(Gen::kBlockBytes) * kLanes;
  alignas(32) unsigned char buffer[kGroupBytes];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t key = pos / key_bytes;
    const int64_t key_end = std::min(end, (key + 1) * key_bytes);
    const Gen gen(keys + key * Gen::kKeyDataWords);
    int64_t offset = pos - key * key_bytes;  // byte offset in this key's stream
    while (pos < key_end) {
      const int64_t group = offset / kGroupBytes;
      const int64_t skip = offset - group * kGroupBytes;
      const u64 first = static_cast<u64>(group) * kLanes;
      const int64_t take = std::min(kGroupBytes - skip, key_end - pos);
      if (skip == 0 && take == kGroupBytes) {
        Isa::Group(gen, first, out + pos);
      } else {
        Isa::Group(gen, first, buffer);
        std::memcpy(out + pos, buffer + skip, take);
      }
      pos += take, offset += take;
    }
  }
}

template <typename Gen>
void FillRangePortable(const u32* keys, unsigned char* out, int64_t key_bytes, int64_t begin,
                       int64_t end) {
  FillRangeBody<Gen, Portable>(keys, out, key_bytes, begin, end);
}

#ifdef JEXT_RNG_HAVE_AVX2
template <typename Gen>
__attribute__((target("avx2"))) void FillRangeAvx2(const u32* keys, unsigned char* out,
                                                   int64_t key_bytes, int64_t begin,
                                                   int64_t end) {
  FillRangeBody<Gen, Avx2>(keys, out, key_bytes, begin, end);
}
#endif

using FillRangeFn = void (*)(const u32*, unsigned char*, int64_t, int64_t, int64_t);

// The AVX2 kernels where the CPU has AVX2, else the baseline ones: a plain build must run
// on any x86-64 (and on other architectures).  JEXT_RNG_AVX2=0, read at each call, forces
// the baseline kernels (to test them, or to compare).
template <typename Gen>
FillRangeFn ChooseFillRange() {
#ifdef JEXT_RNG_HAVE_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && !SwitchedOff("JEXT_RNG_AVX2")) return FillRangeAvx2<Gen>;
#endif
  return FillRangePortable<Gen>;
}

// Fills out with `keys` streams' first `key_bytes` bytes each, on up to MaxThreads()
// threads; ranges start on group boundaries so that only the edges of keys use a buffer.
template <typename Gen>
void FillStreams(const u32* keys, int64_t nkeys, unsigned char* out, int64_t key_bytes) {
  const int64_t total = nkeys * key_bytes;
  if (total == 0) return;
  AdviseHugePages(out, total);
  constexpr int64_t kGroupBytes = static_cast<int64_t>(Gen::kBlockBytes) * kLanes;
  const FillRangeFn fill = ChooseFillRange<Gen>();
  const int64_t threads =
      std::max<int64_t>(1, std::min<int64_t>(MaxThreads(), total / kMinBytesPerThread));
  if (threads == 1) {
    fill(keys, out, key_bytes, 0, total);
    return;
  }
  const int64_t share = (total / threads + kGroupBytes - 1) / kGroupBytes * kGroupBytes;
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  for (int64_t t = 1; t < threads; ++t) {
    const int64_t begin = std::min(total, t * share), end = std::min(total, (t + 1) * share);
    if (begin < end) workers.emplace_back(fill, keys, out, key_bytes, begin, end);
  }
  fill(keys, out, key_bytes, 0, std::min(total, share));
  for (auto& worker : workers) worker.join();
}

template <typename Gen>
ffi::Error Bits(ffi::Buffer<ffi::U32> key_data, ffi::Result<ffi::AnyBuffer> bits,
                int64_t bit_width) {
  const std::string where = std::string("jext_rng_") + Gen::kName + "_bits";
  auto dims = key_data.dimensions();
  if (dims.size() == 0 || dims.back() != Gen::kKeyDataWords) {
    return ffi::Error::InvalidArgument(where + ": key data must be uint32[..., " +
                                       std::to_string(Gen::kKeyDataWords) + "]");
  }
  const int64_t nkeys = static_cast<int64_t>(key_data.element_count()) / Gen::kKeyDataWords;
  const int64_t element_bytes = static_cast<int64_t>(ffi::ByteWidth(bits->element_type()));
  const int64_t out_bytes = static_cast<int64_t>(bits->size_bytes());
  if (bit_width != 8 * element_bytes && !(bit_width == 64 && element_bytes == 4)) {
    return ffi::Error::InvalidArgument(where + ": bit_width " + std::to_string(bit_width) +
                                       " does not match the result's element type");
  }
  if (nkeys == 0) return ffi::Error::Success();
  const int64_t key_out = out_bytes / nkeys;
  const u32* keys = key_data.typed_data();
  auto* out = static_cast<unsigned char*>(bits->untyped_data());
  if (bit_width == 8 * element_bytes) {
    FillStreams<Gen>(keys, nkeys, out, key_out);
    return ffi::Error::Success();
  }
  // uint64 requested without x64: the low 32 bits of each 64-bit value, i.e. every other
  // word of a stream twice as long.
  std::vector<u32> words(static_cast<size_t>(2 * out_bytes / 4));
  FillStreams<Gen>(keys, nkeys, reinterpret_cast<unsigned char*>(words.data()), 2 * key_out);
  u32* low = static_cast<u32*>(bits->untyped_data());
  for (size_t i = 0; i < words.size() / 2; ++i) low[i] = words[2 * i];
  return ffi::Error::Success();
}

}  // namespace
}  // namespace jext_rng

#define JEXT_RNG_HANDLER(symbol, Gen)                                                   \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(symbol, jext_rng::Bits<jext_rng::Gen>,                  \
                                ffi::Ffi::Bind()                                        \
                                    .Arg<ffi::Buffer<ffi::U32>>()                       \
                                    .Ret<ffi::AnyBuffer>()                              \
                                    .Attr<int64_t>("bit_width"))

JEXT_RNG_HANDLER(JextRngPhilox4x64Bits, Philox4x64);
JEXT_RNG_HANDLER(JextRngThreefry4x64Bits, Threefry4x64);
JEXT_RNG_HANDLER(JextRngChaCha20Bits, ChaCha20);

// --- the Python module --------------------------------------------------------------------

namespace {

bool AddHandler(PyObject* dict, const char* name, XLA_FFI_Handler* fn) {
  // The capsule name XLA expects for FFI handlers is NULL (jax.ffi.pycapsule does the same).
  PyObject* capsule = PyCapsule_New(reinterpret_cast<void*>(fn), nullptr, nullptr);
  if (capsule == nullptr) return false;
  const int rc = PyDict_SetItemString(dict, name, capsule);
  Py_DECREF(capsule);
  return rc == 0;
}

PyObject* Handlers(PyObject*, PyObject*) {
  PyObject* dict = PyDict_New();
  if (dict == nullptr) return nullptr;
  if (!AddHandler(dict, "jext_rng_philox4x64_bits", JextRngPhilox4x64Bits) ||
      !AddHandler(dict, "jext_rng_threefry4x64_bits", JextRngThreefry4x64Bits) ||
      !AddHandler(dict, "jext_rng_chacha20_bits", JextRngChaCha20Bits)) {
    Py_DECREF(dict);
    return nullptr;
  }
  return dict;
}

PyObject* Threads(PyObject*, PyObject*) { return PyLong_FromLong(jext_rng::MaxThreads()); }

// The FFI API the handlers were compiled against: jaxlib refuses a newer one than its own
// (and then cannot start its CPU backend), so the plugin checks before registering.
PyObject* FfiApiVersion(PyObject*, PyObject*) {
  return Py_BuildValue("(ii)", XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR);
}

PyMethodDef kMethods[] = {
    {"handlers", Handlers, METH_NOARGS,
     "handlers() -> {FFI target name: PyCapsule} for the CPU platform."},
    {"max_threads", Threads, METH_NOARGS,
     "max_threads() -> the threads a large call uses (cores, capped by JEXT_RNG_THREADS)."},
    {"ffi_api_version", FfiApiVersion, METH_NOARGS,
     "ffi_api_version() -> (major, minor) of the XLA FFI headers the handlers were built with."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_native_cpu", "CPU XLA FFI handlers of jext-rng-native.", -1,
    kMethods,
};

}  // namespace

PyMODINIT_FUNC PyInit__native_cpu(void) { return PyModule_Create(&kModule); }
