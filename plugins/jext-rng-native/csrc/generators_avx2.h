// AVX2 versions of the block functions of generators.h, written with intrinsics.
//
// GCC's auto-vectorization of the portable lane loops reaches half of what AVX2 can do
// (no byte-shuffle rotations, a scalar transpose to block order before the store, no
// vector 64-bit multiply for Philox), so each generator has a hand-written `Group` here:
// the same kLanes blocks per group, the same words, in the same order.  Every function carries
// target("avx2"): rng_cpu.cc calls them only after checking the CPU at run time.

#ifndef JEXT_RNG_NATIVE_GENERATORS_AVX2_H_
#define JEXT_RNG_NATIVE_GENERATORS_AVX2_H_

#if defined(__x86_64__) && defined(__GNUC__)
#define JEXT_RNG_HAVE_AVX2 1

#include <immintrin.h>

#include "generators.h"

#define JEXT_RNG_AVX2 inline __attribute__((always_inline, target("avx2")))

namespace jext_rng {
namespace avx2 {

using V = __m256i;

JEXT_RNG_AVX2 V Load(const void* p) { return _mm256_loadu_si256(static_cast<const V*>(p)); }
JEXT_RNG_AVX2 void Store(unsigned char* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }

// Rotations left; those by whole bytes are one shuffle instead of two shifts and an or.
template <int R>
JEXT_RNG_AVX2 V Rotl64(V x) {
  if constexpr (R == 32) {
    return _mm256_shuffle_epi32(x, 0xB1);
  } else if constexpr (R % 8 == 0) {
    // Byte i of each 64-bit word comes from byte (i - R/8) mod 8.
    constexpr int k = R / 8;
    const V shuffle = _mm256_setr_epi8(
        (8 - k) % 8, (9 - k) % 8, (10 - k) % 8, (11 - k) % 8, (12 - k) % 8, (13 - k) % 8,
        (14 - k) % 8, (15 - k) % 8, 8 + (8 - k) % 8, 8 + (9 - k) % 8, 8 + (10 - k) % 8,
        8 + (11 - k) % 8, 8 + (12 - k) % 8, 8 + (13 - k) % 8, 8 + (14 - k) % 8,
        8 + (15 - k) % 8, (8 - k) % 8, (9 - k) % 8, (10 - k) % 8, (11 - k) % 8, (12 - k) % 8,
        (13 - k) % 8, (14 - k) % 8, (15 - k) % 8, 8 + (8 - k) % 8, 8 + (9 - k) % 8,
        8 + (10 - k) % 8, 8 + (11 - k) % 8, 8 + (12 - k) % 8, 8 + (13 - k) % 8,
        8 + (14 - k) % 8, 8 + (15 - k) % 8);
    return _mm256_shuffle_epi8(x, shuffle);
  } else {
    return _mm256_or_si256(_mm256_slli_epi64(x, R), _mm256_srli_epi64(x, 64 - R));
  }
}

template <int R>
JEXT_RNG_AVX2 V Rotl32(V x) {
  if constexpr (R == 16) {
    const V shuffle = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
                                       2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    return _mm256_shuffle_epi8(x, shuffle);
  } else if constexpr (R == 8) {
    const V shuffle = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
                                       3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    return _mm256_shuffle_epi8(x, shuffle);
  } else {
    return _mm256_or_si256(_mm256_slli_epi32(x, R), _mm256_srli_epi32(x, 32 - R));
  }
}

// Four blocks of four 64-bit words, given word by word across four lanes (w0 = word 0 of
// blocks 0..3, ...), stored in block order at out (128 bytes).
JEXT_RNG_AVX2 void StoreTransposed4x64(V w0, V w1, V w2, V w3, unsigned char* out) {
  const V t0 = _mm256_unpacklo_epi64(w0, w1), t1 = _mm256_unpackhi_epi64(w0, w1);
  const V t2 = _mm256_unpacklo_epi64(w2, w3), t3 = _mm256_unpackhi_epi64(w2, w3);
  Store(out, _mm256_permute2x128_si256(t0, t2, 0x20));
  Store(out + 32, _mm256_permute2x128_si256(t1, t3, 0x20));
  Store(out + 64, _mm256_permute2x128_si256(t0, t2, 0x31));
  Store(out + 96, _mm256_permute2x128_si256(t1, t3, 0x31));
}

// The counters of blocks first .. first + kLanes - 1, word i of block l at c[i][l].
template <typename Word, int kWords>
JEXT_RNG_AVX2 void Counters(const Word* counter, u64 first, Word (*c)[kLanes]) {
  for (int l = 0; l < kLanes; ++l) {
    Word w[kWords];
    CounterPlus<Word, kWords>(counter, first + l, w);
    for (int i = 0; i < kWords; ++i) c[i][l] = w[i];
  }
}

// --- Threefry4x64-20: two registers of four blocks each ---------------------------------

template <int kRa, int kRb>
JEXT_RNG_AVX2 void Mix(V& a, V& b, V& c, V& d) {
  a = _mm256_add_epi64(a, b), b = _mm256_xor_si256(Rotl64<kRa>(b), a);
  c = _mm256_add_epi64(c, d), d = _mm256_xor_si256(Rotl64<kRb>(d), c);
}

// Rounds 4q .. 4q + 3 on one register set (rotation rows from kRow, as in generators.h),
// then the injection of subkey (s0, s1, s2, s3).
template <int kRow>
JEXT_RNG_AVX2 void FourRounds(V* x, V s0, V s1, V s2, V s3) {
  constexpr int kRot[8][2] = {{14, 16}, {52, 57}, {23, 40}, {5, 37},
                              {25, 33}, {46, 12}, {58, 22}, {32, 32}};
  // Even rounds mix (0, 1), (2, 3); odd rounds (0, 3), (2, 1).
  Mix<kRot[kRow][0], kRot[kRow][1]>(x[0], x[1], x[2], x[3]);
  Mix<kRot[kRow + 1][0], kRot[kRow + 1][1]>(x[0], x[3], x[2], x[1]);
  Mix<kRot[kRow + 2][0], kRot[kRow + 2][1]>(x[0], x[1], x[2], x[3]);
  Mix<kRot[kRow + 3][0], kRot[kRow + 3][1]>(x[0], x[3], x[2], x[1]);
  x[0] = _mm256_add_epi64(x[0], s0), x[1] = _mm256_add_epi64(x[1], s1);
  x[2] = _mm256_add_epi64(x[2], s2), x[3] = _mm256_add_epi64(x[3], s3);
}

template <int kRow>
JEXT_RNG_AVX2 void FourRoundsBoth(V* x, V* y, const u64* ks, int s) {
  const V s0 = _mm256_set1_epi64x(static_cast<long long>(ks[s % 5]));
  const V s1 = _mm256_set1_epi64x(static_cast<long long>(ks[(s + 1) % 5]));
  const V s2 = _mm256_set1_epi64x(static_cast<long long>(ks[(s + 2) % 5]));
  const V s3 = _mm256_set1_epi64x(static_cast<long long>(ks[(s + 3) % 5] + static_cast<u64>(s)));
  FourRounds<kRow>(x, s0, s1, s2, s3);
  FourRounds<kRow>(y, s0, s1, s2, s3);
}

JEXT_RNG_AVX2 void Group(const Threefry4x64& gen, u64 first, unsigned char* out) {
  alignas(32) u64 c[4][kLanes];
  Counters<u64, 4>(gen.counter, first, c);
  V x[4], y[4];
  for (int i = 0; i < 4; ++i) {
    const V k = _mm256_set1_epi64x(static_cast<long long>(gen.ks[i]));
    x[i] = _mm256_add_epi64(Load(c[i]), k);
    y[i] = _mm256_add_epi64(Load(c[i] + 4), k);
  }
  FourRoundsBoth<0>(x, y, gen.ks, 1);
  FourRoundsBoth<4>(x, y, gen.ks, 2);
  FourRoundsBoth<0>(x, y, gen.ks, 3);
  FourRoundsBoth<4>(x, y, gen.ks, 4);
  FourRoundsBoth<0>(x, y, gen.ks, 5);
  StoreTransposed4x64(x[0], x[1], x[2], x[3], out);
  StoreTransposed4x64(y[0], y[1], y[2], y[3], out + 128);
}

// --- Philox4x64-10: two registers of four blocks each ----------------------------------

// The 128-bit products a * m of four lanes, from four 32x32->64-bit products: AVX2 has no
// 64-bit multiply, yet four vpmuludq and a few adds beat one scalar mulx per product.
JEXT_RNG_AVX2 void MulHiLo64(V a, u64 m, V* lo, V* hi) {
  const V mask = _mm256_set1_epi64x(0xFFFFFFFFll);
  const V m_lo = _mm256_set1_epi64x(static_cast<long long>(m & 0xFFFFFFFFu));
  const V m_hi = _mm256_set1_epi64x(static_cast<long long>(m >> 32));
  const V a_hi = _mm256_srli_epi64(a, 32);
  const V ll = _mm256_mul_epu32(a, m_lo), lh = _mm256_mul_epu32(a, m_hi);
  const V hl = _mm256_mul_epu32(a_hi, m_lo), hh = _mm256_mul_epu32(a_hi, m_hi);
  // Bits 32..95 of the product, without overflow: three terms below 2^32 each.
  const V mid = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(lh, mask)),
                                 _mm256_and_si256(hl, mask));
  *hi = _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)),
                         _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
  *lo = _mm256_or_si256(_mm256_and_si256(ll, mask), _mm256_slli_epi64(mid, 32));
}

JEXT_RNG_AVX2 void Group(const Philox4x64& gen, u64 first, unsigned char* out) {
  alignas(32) u64 c[4][kLanes];
  Counters<u64, 4>(gen.counter, first, c);
  V x[2][4];
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) x[h][i] = Load(c[i] + 4 * h);
  }
  u64 k0 = gen.key[0], k1 = gen.key[1];
  for (int round = 0; round < 10; ++round) {
    const V key0 = _mm256_set1_epi64x(static_cast<long long>(k0));
    const V key1 = _mm256_set1_epi64x(static_cast<long long>(k1));
    for (auto& w : x) {
      V lo0, hi0, lo1, hi1;
      MulHiLo64(w[0], Philox4x64::kM0, &lo0, &hi0);
      MulHiLo64(w[2], Philox4x64::kM1, &lo1, &hi1);
      w[0] = _mm256_xor_si256(_mm256_xor_si256(hi1, w[1]), key0), w[1] = lo1;
      w[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, w[3]), key1), w[3] = lo0;
    }
    k0 += Philox4x64::kW0, k1 += Philox4x64::kW1;
  }
  StoreTransposed4x64(x[0][0], x[0][1], x[0][2], x[0][3], out);
  StoreTransposed4x64(x[1][0], x[1][1], x[1][2], x[1][3], out + 128);
}

// --- ChaCha20: eight blocks, one per 32-bit lane ----------------------------------------

template <int a, int b, int c, int d>
JEXT_RNG_AVX2 void Quarter(V* x) {
  x[a] = _mm256_add_epi32(x[a], x[b]), x[d] = Rotl32<16>(_mm256_xor_si256(x[d], x[a]));
  x[c] = _mm256_add_epi32(x[c], x[d]), x[b] = Rotl32<12>(_mm256_xor_si256(x[b], x[c]));
  x[a] = _mm256_add_epi32(x[a], x[b]), x[d] = Rotl32<8>(_mm256_xor_si256(x[d], x[a]));
  x[c] = _mm256_add_epi32(x[c], x[d]), x[b] = Rotl32<7>(_mm256_xor_si256(x[b], x[c]));
}

// Eight rows of eight 32-bit words (row i = word i of blocks 0..7) transposed, so that
// out + 64 * l receives word 0..7 of block l (the half of each block these rows hold).
JEXT_RNG_AVX2 void StoreTransposed8x32(const V* r, unsigned char* out) {
  const V a0 = _mm256_unpacklo_epi32(r[0], r[1]), a1 = _mm256_unpackhi_epi32(r[0], r[1]);
  const V a2 = _mm256_unpacklo_epi32(r[2], r[3]), a3 = _mm256_unpackhi_epi32(r[2], r[3]);
  const V a4 = _mm256_unpacklo_epi32(r[4], r[5]), a5 = _mm256_unpackhi_epi32(r[4], r[5]);
  const V a6 = _mm256_unpacklo_epi32(r[6], r[7]), a7 = _mm256_unpackhi_epi32(r[6], r[7]);
  // b0: words 0-3 of blocks 0 and 4 (in its two 128-bit halves), b1: blocks 1 and 5, ...
  const V b0 = _mm256_unpacklo_epi64(a0, a2), b1 = _mm256_unpackhi_epi64(a0, a2);
  const V b2 = _mm256_unpacklo_epi64(a1, a3), b3 = _mm256_unpackhi_epi64(a1, a3);
  const V b4 = _mm256_unpacklo_epi64(a4, a6), b5 = _mm256_unpackhi_epi64(a4, a6);
  const V b6 = _mm256_unpacklo_epi64(a5, a7), b7 = _mm256_unpackhi_epi64(a5, a7);
  Store(out + 0 * 64, _mm256_permute2x128_si256(b0, b4, 0x20));
  Store(out + 1 * 64, _mm256_permute2x128_si256(b1, b5, 0x20));
  Store(out + 2 * 64, _mm256_permute2x128_si256(b2, b6, 0x20));
  Store(out + 3 * 64, _mm256_permute2x128_si256(b3, b7, 0x20));
  Store(out + 4 * 64, _mm256_permute2x128_si256(b0, b4, 0x31));
  Store(out + 5 * 64, _mm256_permute2x128_si256(b1, b5, 0x31));
  Store(out + 6 * 64, _mm256_permute2x128_si256(b2, b6, 0x31));
  Store(out + 7 * 64, _mm256_permute2x128_si256(b3, b7, 0x31));
}

JEXT_RNG_AVX2 void Group(const ChaCha20& gen, u64 first, unsigned char* out) {
  static_assert(kLanes == 8, "one ChaCha20 block per 32-bit lane of a register");
  alignas(32) u32 c[4][kLanes];
  Counters<u32, 4>(gen.counter, first, c);
  V init[16], x[16];
  for (int i = 0; i < 4; ++i) init[i] = _mm256_set1_epi32(static_cast<int>(ChaCha20::kSigma[i]));
  for (int i = 0; i < 8; ++i) init[4 + i] = _mm256_set1_epi32(static_cast<int>(gen.key[i]));
  for (int i = 0; i < 4; ++i) init[12 + i] = Load(c[i]);
  for (int i = 0; i < 16; ++i) x[i] = init[i];
  for (int round = 0; round < 10; ++round) {
    Quarter<0, 4, 8, 12>(x), Quarter<1, 5, 9, 13>(x);
    Quarter<2, 6, 10, 14>(x), Quarter<3, 7, 11, 15>(x);
    Quarter<0, 5, 10, 15>(x), Quarter<1, 6, 11, 12>(x);
    Quarter<2, 7, 8, 13>(x), Quarter<3, 4, 9, 14>(x);
  }
  for (int i = 0; i < 16; ++i) x[i] = _mm256_add_epi32(x[i], init[i]);
  StoreTransposed8x32(x, out);
  StoreTransposed8x32(x + 8, out + 32);
}

}  // namespace avx2
}  // namespace jext_rng

#endif  // x86-64 with GCC or Clang
#endif  // JEXT_RNG_NATIVE_GENERATORS_AVX2_H_
