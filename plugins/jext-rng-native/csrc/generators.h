// The block functions of jext's bundled counter-based generators, on groups of blocks.
//
// Each generator computes kLanes consecutive blocks at once with the lane as the innermost
// loop index of plain uint32/uint64 arithmetic, which the compiler vectorizes for the
// baseline instruction set of the build (SSE2 on x86-64); generators_avx2.h has the same
// functions written for AVX2, used where the CPU has it.  The streams are those of jext/rng_impls (the XLA path): block b of a key enciphers the key's
// counter plus b, and a block's words are written in order, little-endian.

#ifndef JEXT_RNG_NATIVE_GENERATORS_H_
#define JEXT_RNG_NATIVE_GENERATORS_H_

#include <cstdint>
#include <cstring>

// Everything below is inlined into the callers in rng_cpu.cc.
#define JEXT_RNG_INLINE inline __attribute__((always_inline))

namespace jext_rng {

using u32 = uint32_t;
using u64 = uint64_t;

// Blocks computed together; a multiple of every SIMD width in use.
constexpr int kLanes = 8;

JEXT_RNG_INLINE u64 Load64(const u32* words) { return words[0] | (static_cast<u64>(words[1]) << 32); }

JEXT_RNG_INLINE u64 Rotl64(u64 x, int r) { return (x << r) | (x >> (64 - r)); }

JEXT_RNG_INLINE u32 Rotl32(u32 x, int r) { return (x << r) | (x >> (32 - r)); }

// Adds the block index b to a little-endian multi-word counter, carrying across words.
template <typename Word, int kWords>
JEXT_RNG_INLINE void CounterPlus(const Word* counter, u64 b, Word* out) {
  u64 carry = b;
  for (int i = 0; i < kWords; ++i) {
    const Word sum = static_cast<Word>(counter[i] + carry);
    // Word is 32 or 64 bits and carry fits in a Word after the first step.
    carry = (sizeof(Word) == 4 && i == 0) ? (static_cast<u64>(counter[i]) + carry) >> 32
                                          : static_cast<u64>(sum < counter[i]);
    out[i] = sum;
  }
}

// Writes kLanes blocks of four 64-bit words, given word by word across the lanes, in
// block order: block l is w0[l], w1[l], w2[l], w3[l].
JEXT_RNG_INLINE void StoreBlocks4x64(const u64* w0, const u64* w1, const u64* w2, const u64* w3,
                                     unsigned char* out) {
  u64 words[kLanes * 4];
  for (int l = 0; l < kLanes; ++l) {
    words[4 * l] = w0[l], words[4 * l + 1] = w1[l];
    words[4 * l + 2] = w2[l], words[4 * l + 3] = w3[l];
  }
  std::memcpy(out, words, sizeof(words));
}

// --- Philox4x64-10 ----------------------------------------------------------------------

// The 128-bit product a * m: __uint128_t compiles to one scalar multiply.
JEXT_RNG_INLINE void MulHiLo64(u64 a, u64 m, u64* lo, u64* hi) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * m;
  *lo = static_cast<u64>(p), *hi = static_cast<u64>(p >> 64);
}

struct Philox4x64 {
  static constexpr const char* kName = "philox4x64";
  static constexpr int kKeyDataWords = 12;  // uint32: key (4), counter (8)
  static constexpr int kBlockBytes = 32;
  static constexpr u64 kM0 = 0xD2E7470EE14C6C93ull, kM1 = 0xCA5A826395121157ull;
  static constexpr u64 kW0 = 0x9E3779B97F4A7C15ull, kW1 = 0xBB67AE8584CAA73Bull;

  u64 key[2];
  u64 counter[4];

  JEXT_RNG_INLINE explicit Philox4x64(const u32* data) {
    for (int i = 0; i < 2; ++i) key[i] = Load64(data + 2 * i);
    for (int i = 0; i < 4; ++i) counter[i] = Load64(data + 4 + 2 * i);
  }

  // Blocks first .. first + kLanes - 1, written to out (kLanes * 32 bytes).
  JEXT_RNG_INLINE void Group(u64 first, unsigned char* out) const {
    u64 v0[kLanes], v1[kLanes], v2[kLanes], v3[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      u64 c[4];
      CounterPlus<u64, 4>(counter, first + l, c);
      u64 x0 = c[0], x1 = c[1], x2 = c[2], x3 = c[3], k0 = key[0], k1 = key[1];
#pragma GCC unroll 10
      for (int r = 0; r < 10; ++r) {
        u64 lo0, hi0, lo1, hi1;
        MulHiLo64(x0, kM0, &lo0, &hi0);
        MulHiLo64(x2, kM1, &lo1, &hi1);
        x0 = hi1 ^ x1 ^ k0, x1 = lo1, x2 = hi0 ^ x3 ^ k1, x3 = lo0;
        k0 += kW0, k1 += kW1;
      }
      v0[l] = x0, v1[l] = x1, v2[l] = x2, v3[l] = x3;
    }
    StoreBlocks4x64(v0, v1, v2, v3, out);
  }
};

// --- Threefry4x64-20 --------------------------------------------------------------------

struct Threefry4x64 {
  static constexpr const char* kName = "threefry4x64";
  static constexpr int kKeyDataWords = 16;  // uint32: key (8), counter (8)
  static constexpr int kBlockBytes = 32;
  static constexpr u64 kParity = 0x1BD11BDAA9FC1A22ull;

  u64 ks[5];  // the key and its parity word
  u64 counter[4];

  JEXT_RNG_INLINE explicit Threefry4x64(const u32* data) {
    ks[4] = kParity;
    for (int i = 0; i < 4; ++i) {
      ks[i] = Load64(data + 2 * i);
      ks[4] ^= ks[i];
    }
    for (int i = 0; i < 4; ++i) counter[i] = Load64(data + 8 + 2 * i);
  }

  // Rounds 4q .. 4q + 3 (rotation row offset `row`), then the injection of subkey s.
  template <int kRow>
  JEXT_RNG_INLINE static void FourRounds(u64* x0, u64* x1, u64* x2, u64* x3, const u64* ks, int s) {
    // R_64x4 rotations, indexed by round mod 8: (first mix, second mix).
    constexpr int kRot[8][2] = {{14, 16}, {52, 57}, {23, 40}, {5, 37},
                                {25, 33}, {46, 12}, {58, 22}, {32, 32}};
    const u64 s0 = ks[s % 5], s1 = ks[(s + 1) % 5], s2 = ks[(s + 2) % 5];
    const u64 s3 = ks[(s + 3) % 5] + static_cast<u64>(s);
    for (int l = 0; l < kLanes; ++l) {
      u64 a = x0[l], b = x1[l], c = x2[l], d = x3[l];
      // Even rounds mix (a, b), (c, d); odd rounds (a, d), (c, b).
      a += b, b = Rotl64(b, kRot[kRow][0]) ^ a, c += d, d = Rotl64(d, kRot[kRow][1]) ^ c;
      a += d, d = Rotl64(d, kRot[kRow + 1][0]) ^ a, c += b, b = Rotl64(b, kRot[kRow + 1][1]) ^ c;
      a += b, b = Rotl64(b, kRot[kRow + 2][0]) ^ a, c += d, d = Rotl64(d, kRot[kRow + 2][1]) ^ c;
      a += d, d = Rotl64(d, kRot[kRow + 3][0]) ^ a, c += b, b = Rotl64(b, kRot[kRow + 3][1]) ^ c;
      x0[l] = a + s0, x1[l] = b + s1, x2[l] = c + s2, x3[l] = d + s3;
    }
  }

  JEXT_RNG_INLINE void Group(u64 first, unsigned char* out) const {
    u64 x0[kLanes], x1[kLanes], x2[kLanes], x3[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      u64 c[4];
      CounterPlus<u64, 4>(counter, first + l, c);
      x0[l] = c[0] + ks[0], x1[l] = c[1] + ks[1], x2[l] = c[2] + ks[2], x3[l] = c[3] + ks[3];
    }
    // 20 rounds: the rotation rows repeat every 8 rounds, a subkey follows every 4.
    FourRounds<0>(x0, x1, x2, x3, ks, 1);
    FourRounds<4>(x0, x1, x2, x3, ks, 2);
    FourRounds<0>(x0, x1, x2, x3, ks, 3);
    FourRounds<4>(x0, x1, x2, x3, ks, 4);
    FourRounds<0>(x0, x1, x2, x3, ks, 5);
    StoreBlocks4x64(x0, x1, x2, x3, out);
  }
};

// --- ChaCha20 ---------------------------------------------------------------------------

struct ChaCha20 {
  static constexpr const char* kName = "chacha20";
  static constexpr int kKeyDataWords = 12;  // uint32: key (8), counter and nonce (4)
  static constexpr int kBlockBytes = 64;
  // "expand 32-byte k", little-endian.
  static constexpr u32 kSigma[4] = {0x61707865u, 0x3320646Eu, 0x79622D32u, 0x6B206574u};

  u32 key[8];
  u32 counter[4];  // state words 12..15, one little-endian 128-bit counter

  JEXT_RNG_INLINE explicit ChaCha20(const u32* data) {
    std::memcpy(key, data, sizeof(key));
    std::memcpy(counter, data + 8, sizeof(counter));
  }

  JEXT_RNG_INLINE void Group(u64 first, unsigned char* out) const {
    u32 init[4][kLanes];  // the counter words; the rest of the initial state is shared
    for (int l = 0; l < kLanes; ++l) {
      u32 c[4];
      CounterPlus<u32, 4>(counter, first + l, c);
      for (int i = 0; i < 4; ++i) init[i][l] = c[i];
    }
    u32 x[16][kLanes];
    for (int l = 0; l < kLanes; ++l) {
      for (int i = 0; i < 4; ++i) x[i][l] = kSigma[i];
      for (int i = 0; i < 8; ++i) x[4 + i][l] = key[i];
      for (int i = 0; i < 4; ++i) x[12 + i][l] = init[i][l];
    }
    for (int round = 0; round < 10; ++round) {
      for (int l = 0; l < kLanes; ++l) {
        Quarter(x, l, 0, 4, 8, 12), Quarter(x, l, 1, 5, 9, 13);
        Quarter(x, l, 2, 6, 10, 14), Quarter(x, l, 3, 7, 11, 15);
        Quarter(x, l, 0, 5, 10, 15), Quarter(x, l, 1, 6, 11, 12);
        Quarter(x, l, 2, 7, 8, 13), Quarter(x, l, 3, 4, 9, 14);
      }
    }
    u32 words[kLanes * 16];
    for (int l = 0; l < kLanes; ++l) {
      for (int i = 0; i < 4; ++i) words[16 * l + i] = x[i][l] + kSigma[i];
      for (int i = 0; i < 8; ++i) words[16 * l + 4 + i] = x[4 + i][l] + key[i];
      for (int i = 0; i < 4; ++i) words[16 * l + 12 + i] = x[12 + i][l] + init[i][l];
    }
    std::memcpy(out, words, sizeof(words));
  }

  JEXT_RNG_INLINE static void Quarter(u32 (*x)[kLanes], int l, int a, int b, int c, int d) {
    x[a][l] += x[b][l], x[d][l] = Rotl32(x[d][l] ^ x[a][l], 16);
    x[c][l] += x[d][l], x[b][l] = Rotl32(x[b][l] ^ x[c][l], 12);
    x[a][l] += x[b][l], x[d][l] = Rotl32(x[d][l] ^ x[a][l], 8);
    x[c][l] += x[d][l], x[b][l] = Rotl32(x[b][l] ^ x[c][l], 7);
  }
};

}  // namespace jext_rng

#endif  // JEXT_RNG_NATIVE_GENERATORS_H_
