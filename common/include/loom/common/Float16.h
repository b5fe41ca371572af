//===- Float16.h - f16 and bf16 to and from f32 ---------------*- C++ -*-===//
//
// The one conversion of 16-bit floats: to nearest even, NaN kept quiet,
// overflow to infinity, subnormals exact. Header only, so tools that link
// the runtime through its C API (loom-serve) use the same rounding.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_FLOAT16_H
#define LOOM_COMMON_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace loom::runtime {

inline float floatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

inline float bf16ToFloat(uint16_t h) {
  return floatOf(static_cast<uint32_t>(h) << 16);
}

inline uint16_t floatToBf16(float f) {
  uint32_t bits = bitsOf(f);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((bits >> 16) | 0x40); // quiet NaN
  bits += 0x7fff + ((bits >> 16) & 1);                 // nearest even
  return static_cast<uint16_t>(bits >> 16);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else if (exp) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (!mant) {
    bits = sign;
  } else { // subnormal: normalize
    exp = 113;
    while (!(mant & 0x400)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
  }
  return floatOf(bits);
}

inline uint16_t floatToF16(float f) {
  uint32_t bits = bitsOf(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t absBits = bits & 0x7fffffff;
  if (absBits > 0x7f800000)
    return sign | 0x7e00; // NaN
  if (absBits >= 0x477ff000)
    return sign | 0x7c00; // overflows to infinity
  if (absBits < 0x38800000) {
    // Subnormal or zero: scale into the 10-bit mantissa, nearest even.
    float scaled = floatOf(absBits) * 16777216.0f; // 2^24
    uint32_t m = static_cast<uint32_t>(scaled);
    float rest = scaled - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1)))
      ++m;
    return sign | static_cast<uint16_t>(m);
  }
  uint32_t rounded = absBits + 0xfff + ((absBits >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - 0x38000000) >> 13);
}

} // namespace loom::runtime

#endif // LOOM_COMMON_FLOAT16_H
