/* The kernel's vector loops for data in cache, each compiled for one x86-64
 * extension and chosen at import when the CPU and the OS support it (GCC and
 * Clang on x86-64; elsewhere, MSVC and arm64, none is usable and the
 * portable code always runs):
 *
 * - AVX2: the keep-mask AND, d = s & mask | fill, 32 bytes at a time. The
 *   portable loop compiles to 16-byte SSE2 loads and stores, the baseline
 *   every wheel targets; twice the width halves the loads and stores of a
 *   pass that is bound by them in cache. The rows of triu and tril, each
 *   ANDed with (or blended by) a window of a ramp: the mask costs a load
 *   from L1D, not a pass over a mask of the rows. And the transposed walks'
 *   blocks in registers: 4x4 of 8-byte elements, 8x8 of 4- and 2-byte ones,
 *   16x16 of bytes (a load and a store move a row of the block, where the
 *   element walk moves one element each).
 * - AVX-512 (F, BW, VL and BMI2): the same AND 64 bytes at a time, and a
 *   whole row (fill, kept span, fill) in one loop of 64-byte stores, the bytes at
 *   the span's edges and the row's tail chosen by a mask register. A short
 *   row so written costs no call and reads no mask, where a memset and a
 *   memcpy cost a call each and a keep-mask one more load a store. And the
 *   transposed walk's tiles, square blocks (8x8 of 8-byte elements, 16x16
 *   of 1- to 4-byte ones; with AVX2, two 4x4 of 8-byte ones side by side)
 *   whose runs load under masks inside the band, a block's row from
 *   registers to dst in one store (streaming where the result streams and
 *   the row is a whole line), where the tile's buffer costs a store and a
 *   load more an element.
 *
 * TRILU_AVX2=0 in the environment keeps the portable loops, TRILU_AVX512=0
 * the AVX2 ones (_write.pxi reads them).
 */
#ifndef TRILU_SIMD_H
#define TRILU_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The longest rows of trilu_edge_rows_avx2 (its ramp's length). */
enum { TRILU_RAMP = 512 };

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) \
    && !defined(_MSC_VER)
#include <immintrin.h>

/* d = s & mask | fill over n bytes (fill NULL: zeros, d = s & mask). */
__attribute__((target("avx2")))
static void trilu_and_avx2(char *d, const char *s, const char *mask,
                           const char *fill, size_t n)
{
    size_t t = 0;
    unsigned long long v, m, f;
    if (fill == NULL) {
        for (; t + 32 <= n; t += 32)
            _mm256_storeu_si256(
                (__m256i *)(d + t),
                _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(s + t)),
                                 _mm256_loadu_si256((const __m256i *)(mask + t))));
        for (; t + 8 <= n; t += 8) {
            memcpy(&v, s + t, 8);
            memcpy(&m, mask + t, 8);
            v &= m;
            memcpy(d + t, &v, 8);
        }
        for (; t < n; t++)
            d[t] = (char)(s[t] & mask[t]);
        return;
    }
    for (; t + 32 <= n; t += 32)
        _mm256_storeu_si256(
            (__m256i *)(d + t),
            _mm256_or_si256(
                _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(s + t)),
                                 _mm256_loadu_si256((const __m256i *)(mask + t))),
                _mm256_loadu_si256((const __m256i *)(fill + t))));
    for (; t + 8 <= n; t += 8) {
        memcpy(&v, s + t, 8);
        memcpy(&m, mask + t, 8);
        memcpy(&f, fill + t, 8);
        v = (v & m) | f;
        memcpy(d + t, &v, 8);
    }
    for (; t < n; t++)
        d[t] = (char)((s[t] & mask[t]) | fill[t]);
}

/* The transposed walk's gather of 8-byte elements, four runs at a time:
 * element i of run k (at s[k] + i * step, step 8 or -8: runs along a row,
 * read forwards or backwards) to t + i * line + 8 * k, for i in [lo, hi),
 * a 4x4 block in registers at a time; returns where the blocks stopped. A
 * load and a store move four elements, where the scalar gather moves one. */
__attribute__((target("avx2")))
static ptrdiff_t trilu_transpose4_avx2(char *t, ptrdiff_t line,
                                       const char *const *s, ptrdiff_t step,
                                       ptrdiff_t lo, ptrdiff_t hi)
{
    ptrdiff_t i = lo;
    int k;
    __m256d r[4], a0, a1, a2, a3;
    for (; i + 4 <= hi; i += 4) {
        for (k = 0; k < 4; k++)
            r[k] = step > 0
                ? _mm256_loadu_pd((const double *)(s[k] + 8 * i))
                /* elements i + 3 .. i, reversed */
                : _mm256_permute4x64_pd(
                      _mm256_loadu_pd((const double *)(s[k] - 8 * (i + 3))), 0x1B);
        a0 = _mm256_unpacklo_pd(r[0], r[1]);
        a1 = _mm256_unpackhi_pd(r[0], r[1]);
        a2 = _mm256_unpacklo_pd(r[2], r[3]);
        a3 = _mm256_unpackhi_pd(r[2], r[3]);
        _mm256_storeu_pd((double *)(t + i * line), _mm256_permute2f128_pd(a0, a2, 0x20));
        _mm256_storeu_pd((double *)(t + (i + 1) * line),
                         _mm256_permute2f128_pd(a1, a3, 0x20));
        _mm256_storeu_pd((double *)(t + (i + 2) * line),
                         _mm256_permute2f128_pd(a0, a2, 0x31));
        _mm256_storeu_pd((double *)(t + (i + 3) * line),
                         _mm256_permute2f128_pd(a1, a3, 0x31));
    }
    return i;
}

/* The same for 4-byte elements, eight runs at a time (step 4: runs along
 * rows, read forwards): element i of run k (at s[k] + 4 * i) to t + i *
 * line + 4 * k, for i in [lo, hi), an 8x8 block in registers at a time;
 * returns where the blocks stopped. */
__attribute__((target("avx2")))
static ptrdiff_t trilu_transpose8_avx2(char *t, ptrdiff_t line,
                                       const char *const *s, ptrdiff_t lo,
                                       ptrdiff_t hi)
{
    ptrdiff_t i = lo;
    int k;
    __m256 r[8], u[8], v[8];
    for (; i + 8 <= hi; i += 8) {
        for (k = 0; k < 8; k++)
            r[k] = _mm256_loadu_ps((const float *)(s[k] + 4 * i));
        for (k = 0; k < 8; k += 2) {        /* pairs of runs interleaved */
            u[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
            u[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
        }
        for (k = 0; k < 8; k += 4) {        /* fours: each lane a row's four */
            v[k] = _mm256_shuffle_ps(u[k], u[k + 2], 0x44);
            v[k + 1] = _mm256_shuffle_ps(u[k], u[k + 2], 0xEE);
            v[k + 2] = _mm256_shuffle_ps(u[k + 1], u[k + 3], 0x44);
            v[k + 3] = _mm256_shuffle_ps(u[k + 1], u[k + 3], 0xEE);
        }
        for (k = 0; k < 4; k++) {           /* the lanes of runs 0-3 and 4-7 */
            _mm256_storeu_ps((float *)(t + (i + k) * line),
                             _mm256_permute2f128_ps(v[k], v[k + 4], 0x20));
            _mm256_storeu_ps((float *)(t + (i + k + 4) * line),
                             _mm256_permute2f128_ps(v[k], v[k + 4], 0x31));
        }
    }
    return i;
}

/* The same for 2-byte elements, eight runs at a time (step 2: runs along
 * rows, read forwards): element i of run k (at s[k] + 2 * i) to t + i *
 * line + 2 * k, for i in [lo, hi), an 8x8 block in 16-byte registers at a
 * time (each stage interleaves pairs of runs, then of pairs, then of
 * fours); returns where the blocks stopped. */
__attribute__((target("avx2")))
static ptrdiff_t trilu_transpose_words_avx2(char *t, ptrdiff_t line,
                                            const char *const *s, ptrdiff_t lo,
                                            ptrdiff_t hi)
{
    ptrdiff_t i = lo;
    int k, q, h;
    __m128i a[8], b[8];
    for (; i + 8 <= hi; i += 8) {
        for (k = 0; k < 8; k++)
            a[k] = _mm_loadu_si128((const __m128i *)(s[k] + 2 * i));
        for (k = 0; k < 4; k++) {       /* b[4q + k]: elements 4q.., runs 2k, 2k+1 */
            b[k] = _mm_unpacklo_epi16(a[2 * k], a[2 * k + 1]);
            b[4 + k] = _mm_unpackhi_epi16(a[2 * k], a[2 * k + 1]);
        }
        for (q = 0; q < 2; q++)         /* a[4q + 2m + h]: elements 4q + 2h.., runs 4m.. */
            for (k = 0; k < 2; k++) {
                a[4 * q + 2 * k] = _mm_unpacklo_epi32(b[4 * q + 2 * k],
                                                      b[4 * q + 2 * k + 1]);
                a[4 * q + 2 * k + 1] = _mm_unpackhi_epi32(b[4 * q + 2 * k],
                                                          b[4 * q + 2 * k + 1]);
            }
        for (q = 0; q < 2; q++)         /* each element's eight runs */
            for (h = 0; h < 2; h++) {
                _mm_storeu_si128((__m128i *)(t + (i + 4 * q + 2 * h) * line),
                                 _mm_unpacklo_epi64(a[4 * q + h], a[4 * q + 2 + h]));
                _mm_storeu_si128((__m128i *)(t + (i + 4 * q + 2 * h + 1) * line),
                                 _mm_unpackhi_epi64(a[4 * q + h], a[4 * q + 2 + h]));
            }
    }
    return i;
}

/* A 16x16 block of bytes transposed in 16-byte registers: r[k]'s byte q to
 * r[q]'s byte k (pairs of rows interleaved by bytes, then by 2, 4 and 8). */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
trilu_transpose16x16_bytes(__m128i *r)
{
    __m128i b[16];
    int k, c, h;
    for (k = 0; k < 8; k++) {       /* b[8h + k]: elements 8h.., rows 2k, 2k+1 */
        b[k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
        b[8 + k] = _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
    }
    for (k = 0; k < 4; k++) {       /* r[4c + k]: elements 4c.., rows 4k.. */
        r[k] = _mm_unpacklo_epi16(b[2 * k], b[2 * k + 1]);
        r[4 + k] = _mm_unpackhi_epi16(b[2 * k], b[2 * k + 1]);
        r[8 + k] = _mm_unpacklo_epi16(b[8 + 2 * k], b[8 + 2 * k + 1]);
        r[12 + k] = _mm_unpackhi_epi16(b[8 + 2 * k], b[8 + 2 * k + 1]);
    }
    for (c = 0; c < 4; c++)         /* b[4c + 2p + h]: elements 4c + 2h.., rows 8p.. */
        for (k = 0; k < 2; k++) {
            b[4 * c + 2 * k] = _mm_unpacklo_epi32(r[4 * c + 2 * k],
                                                  r[4 * c + 2 * k + 1]);
            b[4 * c + 2 * k + 1] = _mm_unpackhi_epi32(r[4 * c + 2 * k],
                                                      r[4 * c + 2 * k + 1]);
        }
    for (c = 0; c < 4; c++)         /* each element's sixteen rows */
        for (h = 0; h < 2; h++) {
            r[4 * c + 2 * h] = _mm_unpacklo_epi64(b[4 * c + h], b[4 * c + 2 + h]);
            r[4 * c + 2 * h + 1] = _mm_unpackhi_epi64(b[4 * c + h],
                                                      b[4 * c + 2 + h]);
        }
}

/* The same for 1-byte elements, sixteen runs at a time (step 1): element i
 * of run k (at s[k] + i) to t + i * line + k, for i in [lo, hi), a 16x16
 * block in 16-byte registers at a time; returns where the blocks stopped. */
__attribute__((target("avx2")))
static ptrdiff_t trilu_transpose_bytes_avx2(char *t, ptrdiff_t line,
                                            const char *const *s, ptrdiff_t lo,
                                            ptrdiff_t hi)
{
    ptrdiff_t i = lo;
    int k;
    __m128i r[16];
    for (; i + 16 <= hi; i += 16) {
        for (k = 0; k < 16; k++)
            r[k] = _mm_loadu_si128((const __m128i *)(s[k] + i));
        trilu_transpose16x16_bytes(r);
        for (k = 0; k < 16; k++)
            _mm_storeu_si128((__m128i *)(t + (i + k) * line), r[k]);
    }
    return i;
}

/* A 16x16 block of 2-byte elements transposed in 32-byte registers: pairs
 * of rows interleaved by 2 bytes, then by 4 and 8 (within each 16-byte
 * lane: a lane holds a column's eight rows, columns e and e + 8 a
 * register's two), then the lanes of rows 0-7 and 8-15 joined. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
trilu_transpose16x16_words(__m256i *r)
{
    __m256i t[16];
    int k, q, m;
    for (k = 0; k < 8; k++) {       /* t[2k], t[2k + 1]: a lane's elements 0-3, 4-7 */
        t[2 * k] = _mm256_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
    }
    for (q = 0; q < 4; q++) {       /* r[4q + m]: rows 4q.., elements 2m, 2m + 1 */
        r[4 * q] = _mm256_unpacklo_epi32(t[4 * q], t[4 * q + 2]);
        r[4 * q + 1] = _mm256_unpackhi_epi32(t[4 * q], t[4 * q + 2]);
        r[4 * q + 2] = _mm256_unpacklo_epi32(t[4 * q + 1], t[4 * q + 3]);
        r[4 * q + 3] = _mm256_unpackhi_epi32(t[4 * q + 1], t[4 * q + 3]);
    }
    for (q = 0; q < 2; q++)         /* t[8q + 2m + h]: rows 8q.., element 2m + h */
        for (m = 0; m < 4; m++) {
            t[8 * q + 2 * m] = _mm256_unpacklo_epi64(r[8 * q + m], r[8 * q + 4 + m]);
            t[8 * q + 2 * m + 1] = _mm256_unpackhi_epi64(r[8 * q + m],
                                                         r[8 * q + 4 + m]);
        }
    for (k = 0; k < 8; k++) {       /* columns k and k + 8: rows 0-7 beside 8-15 */
        r[k] = _mm256_permute2x128_si256(t[k], t[8 + k], 0x20);
        r[k + 8] = _mm256_permute2x128_si256(t[k], t[8 + k], 0x31);
    }
}

/* The keep-mask of a row's span from one edge x (0 <= x <= TRILU_RAMP), as
 * a window of a ramp: the bytes of TRILU_FROM(x) are 0xFF from byte x on,
 * those of TRILU_BEFORE(x) before it, for rows of up to TRILU_RAMP bytes. */
#define TRILU_FROM(x) (trilu_ramp + TRILU_RAMP - (x))
#define TRILU_BEFORE(x) (trilu_ramp + 2 * TRILU_RAMP - (x))
static const unsigned char trilu_ramp[3 * TRILU_RAMP] = {
#define TRILU_R8(v) v, v, v, v, v, v, v, v
#define TRILU_R64(v) TRILU_R8(v), TRILU_R8(v), TRILU_R8(v), TRILU_R8(v), \
    TRILU_R8(v), TRILU_R8(v), TRILU_R8(v), TRILU_R8(v)
#define TRILU_R512(v) TRILU_R64(v), TRILU_R64(v), TRILU_R64(v), TRILU_R64(v), \
    TRILU_R64(v), TRILU_R64(v), TRILU_R64(v), TRILU_R64(v)
    TRILU_R512(0), TRILU_R512(255), TRILU_R512(0)
#undef TRILU_R512
#undef TRILU_R64
#undef TRILU_R8
};

/* The vector at t of a row: s's bytes where the window m is 0xFF, else the
 * fill's (zeros: an AND). */
#define TRILU_EDGE(t)                                                         \
    do {                                                                      \
        __m256i v_ = _mm256_loadu_si256((const __m256i *)(s + (t)));          \
        __m256i m_ = _mm256_loadu_si256((const __m256i *)(m + (t)));          \
        _mm256_storeu_si256((__m256i *)(d + (t)), zeros                       \
            ? _mm256_and_si256(v_, m_) : _mm256_blendv_epi8(f, v_, m_));      \
    } while (0)

/* Rows [i0, i1) of a band (a, b) of a matrix of `cols` elements of w bytes,
 * rows of 32 to 512 bytes that all keep their end (triu's) or all their
 * start (tril's): each row's bytes ANDed with its keep-mask, a window of a
 * ramp (no mask read from memory beyond it, no branch on the span), or
 * blended with the fill (a 16-byte pattern whose element width divides 16;
 * NULL: zeros), 32 bytes at a time; a row whose length is not a multiple of
 * 32 ends with a vector that overlaps the one before, at a whole element,
 * where the pattern's phase holds. Reads s's rows whole, not only their
 * spans. */
__attribute__((target("avx2")))
static void trilu_edge_rows_avx2(char *d, const char *s, ptrdiff_t dst_row,
                                 ptrdiff_t src_row, ptrdiff_t i0, ptrdiff_t i1,
                                 ptrdiff_t a, ptrdiff_t b, ptrdiff_t cols,
                                 ptrdiff_t w, const char *fill)
{
    const int zeros = fill == NULL, end = i0 + b + 1 >= cols;
    const __m256i f = zeros ? _mm256_setzero_si256() : _mm256_broadcastsi128_si256(
        _mm_loadu_si128((const __m128i *)fill));
    const ptrdiff_t n = cols * w;
    ptrdiff_t i, t, e, x = (end ? i0 + a : i0 + b + 1) * w;  /* the edge */
    const unsigned char *m;
    for (i = i0; i < i1; i++, x += w, d += dst_row, s += src_row) {
        e = x < 0 ? 0 : (x > n ? n : x);
        m = end ? TRILU_FROM(e) : TRILU_BEFORE(e);
#if defined(__clang__)
#pragma clang loop unroll_count(4)
#else
#pragma GCC unroll 4
#endif
        for (t = 0; t + 32 <= n; t += 32)
            TRILU_EDGE(t);
        if (t < n)
            TRILU_EDGE(n - 32);
    }
}

/* The 8 bytes at p. */
static inline long long trilu_word(const char *p)
{
    long long v;
    memcpy(&v, p, 8);
    return v;
}

/* The 4 bytes at p. */
static inline unsigned trilu_word32(const char *p)
{
    unsigned v;
    memcpy(&v, p, 4);
    return v;
}

/* The lanes [lo, hi) of n (16 at most), lo and hi clipped to them. */
static inline unsigned trilu_lanes(ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t n)
{
    lo = lo < 0 ? 0 : (lo > n ? n : lo);
    hi = hi < lo ? lo : (hi > n ? n : hi);
    return ((1u << hi) - 1) & ~((1u << lo) - 1);
}

/* A block's row to p: a streaming store where `stream`, else a normal one
 * (the intrinsics of the row's width, on a T *). */
#define TRILU_STORE_AS(streaming, normal, T, p, v)  \
    do {                                            \
        if (stream)                                 \
            streaming((T *)(p), (v));               \
        else                                        \
            normal((T *)(p), (v));                  \
    } while (0)
#define TRILU_STORE128(p, v) \
    TRILU_STORE_AS(_mm_stream_si128, _mm_storeu_si128, __m128i, p, v)
#define TRILU_STORE256(p, v) \
    TRILU_STORE_AS(_mm256_stream_pd, _mm256_storeu_pd, double, p, v)
#define TRILU_STORE256I(p, v) \
    TRILU_STORE_AS(_mm256_stream_si256, _mm256_storeu_si256, __m256i, p, v)
#define TRILU_STORE512(p, v) \
    TRILU_STORE_AS(_mm512_stream_si512, _mm512_storeu_si512, void, p, v)

/* The tile of trilu_tile8_avx512 on AVX2 (a fill given): 4x4 blocks in
 * registers (trilu_transpose4_avx2's), two side by side, so that a row of
 * the pair is a whole line (streamed: two 32-byte streaming stores, one
 * after the other). A run's elements outside the band are loaded under a mask (none
 * read), the fill blended into their lanes. */
__attribute__((target("avx2")))
static void trilu_tile8_avx2(char *const *d, const char *const *s, ptrdiff_t i0,
                             ptrdiff_t i1, ptrdiff_t j0, ptrdiff_t j1, ptrdiff_t a,
                             ptrdiff_t b, const char *fill, int stream)
{
    const __m256d f = _mm256_castsi256_pd(_mm256_set1_epi64x(trilu_word(fill)));
    const __m256i lane = _mm256_setr_epi64x(1, 2, 4, 8);
    __m256d r[8], t[4];
    __m256i m;
    ptrdiff_t i, j;
    int k, h, all;
    for (j = j0; j < j1; j += 8)
        for (i = i0; i < i1; i += 4) {
            if (i >= j - a + 8 || i <= j - b - 4) {  /* none in the band */
                for (k = 0; k < 4; k++) {
                    TRILU_STORE256(d[i - i0 + k] + 8 * j, f);
                    TRILU_STORE256(d[i - i0 + k] + 8 * j + 32, f);
                }
                continue;
            }
            all = j + 7 - b <= i && j - a + 1 >= i + 4;
            for (k = 0; k < 8; k++) {  /* run k's rows in the band */
                if (all) {
                    r[k] = _mm256_loadu_pd((const double *)(s[j - j0 + k] + 8 * i));
                    continue;
                }
                m = _mm256_cmpeq_epi64(
                    _mm256_and_si256(lane, _mm256_set1_epi64x(
                        trilu_lanes(j + k - b - i, j + k - a - i + 1, 4))),
                    lane);
                r[k] = _mm256_blendv_pd(
                    f, _mm256_maskload_pd((const double *)(s[j - j0 + k] + 8 * i), m),
                    _mm256_castsi256_pd(m));
            }
            for (h = 0; h < 2; h++) {  /* runs 4h..4h + 3: a 4x4 block */
                t[0] = _mm256_unpacklo_pd(r[4 * h], r[4 * h + 1]);
                t[1] = _mm256_unpackhi_pd(r[4 * h], r[4 * h + 1]);
                t[2] = _mm256_unpacklo_pd(r[4 * h + 2], r[4 * h + 3]);
                t[3] = _mm256_unpackhi_pd(r[4 * h + 2], r[4 * h + 3]);
                r[4 * h] = _mm256_permute2f128_pd(t[0], t[2], 0x20);
                r[4 * h + 1] = _mm256_permute2f128_pd(t[1], t[3], 0x20);
                r[4 * h + 2] = _mm256_permute2f128_pd(t[0], t[2], 0x31);
                r[4 * h + 3] = _mm256_permute2f128_pd(t[1], t[3], 0x31);
            }
            for (k = 0; k < 4; k++) {  /* row k: its line's halves */
                TRILU_STORE256(d[i - i0 + k] + 8 * j, r[k]);
                TRILU_STORE256(d[i - i0 + k] + 8 * j + 32, r[k + 4]);
            }
        }
}

#define TRILU_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,bmi2")))

/* The first n bytes of a vector (n <= 64). */
TRILU_AVX512 static inline __mmask64 trilu_first(size_t n)
{
    return _bzhi_u64(~0ULL, (unsigned)n);
}

/* trilu_and_avx2, 64 bytes at a time, the tail under a mask. */
TRILU_AVX512
static void trilu_and_avx512(char *d, const char *s, const char *mask,
                             const char *fill, size_t n)
{
    size_t t = 0;
    __mmask64 k;
    __m512i v;
    for (; t + 64 <= n; t += 64) {
        v = _mm512_and_si512(_mm512_loadu_si512(s + t),
                             _mm512_loadu_si512(mask + t));
        if (fill != NULL)
            v = _mm512_or_si512(v, _mm512_loadu_si512(fill + t));
        _mm512_storeu_si512(d + t, v);
    }
    if (t < n) {
        k = trilu_first(n - t);
        v = _mm512_and_si512(_mm512_maskz_loadu_epi8(k, s + t),
                             _mm512_maskz_loadu_epi8(k, mask + t));
        if (fill != NULL)
            v = _mm512_or_si512(v, _mm512_maskz_loadu_epi8(k, fill + t));
        _mm512_mask_storeu_epi8(d + t, k, v);
    }
}

/* The bytes [lo, hi) of the vector at t, as a mask. */
TRILU_AVX512 static inline __mmask64 trilu_span_bits(size_t t, size_t lo,
                                                      size_t hi)
{
    size_t x = lo > t ? lo - t : 0, y = hi > t ? hi - t : 0;
    if (y > 64)
        y = 64;
    return x >= y ? 0 : trilu_first(y) & ~trilu_first(x);
}

/* A row of n bytes at d: s's bytes over [lo, hi), the fill f elsewhere (a
 * 16-byte pattern whose element width divides 16, as _stream.h's, its byte
 * j at row byte j % 16). Bytes of s outside [lo, hi) are not read. Three
 * forms, the fewest instructions a row for each: rows that keep their end
 * (triu's), their start (tril's), or neither (a band's). */
#define TRILU_ROW TRILU_AVX512 __attribute__((always_inline)) static inline void

/* The vector at t, s's bytes where k, f's elsewhere. */
#define TRILU_BLEND(t, k) \
    _mm512_storeu_si512(d + (t), _mm512_mask_loadu_epi8(f, (k), s + (t)))

TRILU_ROW trilu_row_end(char *d, const char *s, size_t lo, size_t n, __m512i f)
{
    size_t t = 0;
    for (; t + 64 <= lo; t += 64)
        _mm512_storeu_si512(d + t, f);
    if (t + 64 <= n) {                     /* lo - t < 64 here */
        TRILU_BLEND(t, ~0ULL << (lo - t));
        for (t += 64; t + 64 <= n; t += 64)
            _mm512_storeu_si512(d + t, _mm512_loadu_si512(s + t));
    }
    if (t < n)
        _mm512_mask_storeu_epi8(d + t, trilu_first(n - t), _mm512_mask_loadu_epi8(
            f, lo > t ? ~0ULL << (lo - t) : ~0ULL, s + t));
}

TRILU_ROW trilu_row_start(char *d, const char *s, size_t hi, size_t n,
                          __m512i f)
{
    size_t t = 0;
    for (; t + 64 <= hi; t += 64)
        _mm512_storeu_si512(d + t, _mm512_loadu_si512(s + t));
    if (t + 64 <= n) {                     /* hi - t < 64 here */
        TRILU_BLEND(t, trilu_first(hi - t));
        for (t += 64; t + 64 <= n; t += 64)
            _mm512_storeu_si512(d + t, f);
    }
    if (t < n)
        _mm512_mask_storeu_epi8(d + t, trilu_first(n - t), _mm512_mask_loadu_epi8(
            f, hi > t ? trilu_first(hi - t) : 0, s + t));
}

TRILU_ROW trilu_row_band(char *d, const char *s, size_t lo, size_t hi, size_t n,
                         __m512i f)
{
    size_t t = 0;
    for (; t + 64 <= lo; t += 64)
        _mm512_storeu_si512(d + t, f);
    if (t < lo && t < hi && t + 64 <= n) {
        TRILU_BLEND(t, trilu_span_bits(t, lo, hi));
        t += 64;
    }
    for (; t + 64 <= hi; t += 64)
        _mm512_storeu_si512(d + t, _mm512_loadu_si512(s + t));
    if (t < hi && t + 64 <= n) {
        TRILU_BLEND(t, trilu_span_bits(t, lo, hi));
        t += 64;
    }
    for (; t + 64 <= n; t += 64)
        _mm512_storeu_si512(d + t, f);
    if (t < n)
        _mm512_mask_storeu_epi8(d + t, trilu_first(n - t), _mm512_mask_loadu_epi8(
            f, trilu_span_bits(t, lo, hi), s + t));
}

/* Rows [i0, i1) of a band (a, b) of a matrix of `cols` elements of w bytes
 * (row i keeps columns [i + a, i + b + 1), clipped), each one of the row
 * forms above: one call a run of rows, the spans computed in the loop, read
 * from s's rows, src_row bytes apart (TRILU_ROWS), or from packed lines
 * (TRILU_LINE_ROWS). */
#define TRILU_ROWS(row, ...)                                  \
    for (i = i0; i < i1; i++, x += w, d += dst_row, s += src_row) { \
        lo = x < 0 ? 0 : (x > n ? n : x);                     \
        hi = x + span < lo ? lo : (x + span > n ? n : x + span); \
        row(d, s, __VA_ARGS__, (size_t)n, f);                 \
    }
#define TRILU_LINE_ROWS(row, ...)                             \
    for (i = i0; i < i1; i++, x += w, d += dst_row, line += hi - lo) { \
        lo = x < 0 ? 0 : (x > n ? n : x);                     \
        hi = x + span < lo ? lo : (x + span > n ? n : x + span); \
        row(d, line - lo, __VA_ARGS__, (size_t)n, f);         \
    }
/* The rows as one row form: all keep their end, all their start, or
 * neither. */
#define TRILU_FORMS(rows)                                     \
    const __m512i f = _mm512_broadcast_i32x4(                 \
        _mm_loadu_si128((const __m128i *)fill));              \
    const ptrdiff_t n = cols * w, span = (b - a + 1) * w;     \
    ptrdiff_t i, x = (i0 + a) * w, lo = 0, hi = 0;  /* x: row i's i + a, in bytes */ \
    if (i0 + b + 1 >= cols)                                   \
        rows(trilu_row_end, (size_t)lo)                       \
    else if (i1 - 1 + a <= 0)                                 \
        rows(trilu_row_start, (size_t)hi)                     \
    else                                                      \
        rows(trilu_row_band, (size_t)lo, (size_t)hi)

TRILU_AVX512
static void trilu_rows_avx512(char *d, const char *s, ptrdiff_t dst_row,
                              ptrdiff_t src_row, ptrdiff_t i0, ptrdiff_t i1,
                              ptrdiff_t a, ptrdiff_t b, ptrdiff_t cols,
                              ptrdiff_t w, const char *fill)
{
    TRILU_FORMS(TRILU_ROWS)
}

/* The same rows, their spans from packed lines at `line`, each right after
 * the one before (an UNPACK's): row i's from line, less its start, which no
 * row form reads. */
TRILU_AVX512
static void trilu_line_rows_avx512(char *d, const char *line, ptrdiff_t dst_row,
                                   ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t a,
                                   ptrdiff_t b, ptrdiff_t cols, ptrdiff_t w,
                                   const char *fill)
{
    TRILU_FORMS(TRILU_LINE_ROWS)
}

/* A mirror's rows [i0, i1) but their band (xa, xb) read across (at their
 * start, xb < a, or at their end, xa > b): the band (a, b) from packed
 * lines at `line`, each right after the one before, the fill elsewhere;
 * each row's part past the band read across only, as a row form. */
TRILU_AVX512
static void trilu_along_rows_avx512(char *d, const char *line, ptrdiff_t dst_row,
                                    ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t a,
                                    ptrdiff_t b, ptrdiff_t xa, ptrdiff_t xb,
                                    ptrdiff_t cols, ptrdiff_t w, const char *fill)
{
    const __m512i f = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)fill));
    const ptrdiff_t n = cols * w, span = (b - a + 1) * w;
    ptrdiff_t i, x = (i0 + a) * w, lo, hi, e;  /* x: row i's i + a, in bytes */
    for (i = i0; i < i1; i++, x += w, d += dst_row, line += hi - lo) {
        lo = x < 0 ? 0 : (x > n ? n : x);
        hi = x + span < lo ? lo : (x + span > n ? n : x + span);
        if (xb < a) {          /* from the end of the band read across */
            e = (i + xb + 1) * w;
            e = e < 0 ? 0 : (e > lo ? lo : e);
            trilu_row_end(d + e, line - lo + e, (size_t)(lo - e), (size_t)(n - e),
                          f);
        } else {               /* up to its start */
            e = (i + xa) * w;
            e = e < hi ? hi : (e > n ? n : e);
            trilu_row_start(d, line - lo, (size_t)hi, (size_t)e, f);
        }
    }
}

/* PACK's rows [i0, i1) of a band (a, b) of a matrix of `cols` elements of w
 * bytes, rows src_row bytes apart from s: row i's span to the packed line at
 * `line`, each right after the one before, 64 bytes at a time, the tail
 * under a mask (nothing outside the spans read or written): a copy inline
 * a row, where memcpy is a call. */
TRILU_AVX512
static void trilu_pack_rows_avx512(char *line, const char *s, ptrdiff_t src_row,
                                   ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t a,
                                   ptrdiff_t b, ptrdiff_t cols, ptrdiff_t w)
{
    const ptrdiff_t n = cols * w, span = (b - a + 1) * w;
    ptrdiff_t i, t, x = (i0 + a) * w, lo, hi;  /* x: row i's i + a, in bytes */
    __mmask64 k;
    for (i = i0; i < i1; i++, x += w, s += src_row) {
        lo = x < 0 ? 0 : (x > n ? n : x);
        hi = (x + span < lo ? lo : (x + span > n ? n : x + span)) - lo;
        for (t = 0; t + 64 <= hi; t += 64)
            _mm512_storeu_si512(line + t, _mm512_loadu_si512(s + lo + t));
        if (t < hi) {
            k = trilu_first((size_t)(hi - t));
            _mm512_mask_storeu_epi8(line + t, k,
                                    _mm512_maskz_loadu_epi8(k, s + lo + t));
        }
        line += hi;
    }
}

/* An 8x8 block of 8-byte elements transposed in registers: r[k]'s element
 * q to r[q]'s element k (pairs of rows interleaved, then pairs of pairs by
 * 16 bytes, then fours by 32). */
TRILU_AVX512 static inline __attribute__((always_inline)) void
trilu_transpose8x8(__m512i *r)
{
    __m512i t[8], u[8];
    int k;
    for (k = 0; k < 8; k += 2) {
        t[k] = _mm512_unpacklo_epi64(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_epi64(r[k], r[k + 1]);
    }
    for (k = 0; k < 8; k += 4) {
        u[k] = _mm512_shuffle_i64x2(t[k], t[k + 2], 0x88);
        u[k + 1] = _mm512_shuffle_i64x2(t[k], t[k + 2], 0xDD);
        u[k + 2] = _mm512_shuffle_i64x2(t[k + 1], t[k + 3], 0x88);
        u[k + 3] = _mm512_shuffle_i64x2(t[k + 1], t[k + 3], 0xDD);
    }
    for (k = 0; k < 4; k++) {  /* u[0..3]: elements 0/4, 2/6, 1/5, 3/7 */
        r[(k & 1) * 2 + (k >> 1)] = _mm512_shuffle_i64x2(u[k], u[k + 4], 0x88);
        r[(k & 1) * 2 + (k >> 1) + 4] = _mm512_shuffle_i64x2(u[k], u[k + 4], 0xDD);
    }
}

/* A 16x16 block of 4-byte elements transposed in registers: pairs of rows
 * interleaved by 4 bytes, then by 8 (each 16-byte lane a column's four),
 * then lanes of fours of rows by 16 bytes, twice. */
TRILU_AVX512 static inline __attribute__((always_inline)) void
trilu_transpose16x16(__m512i *r)
{
    __m512i t[16], u[16];
    int k;
    for (k = 0; k < 16; k += 2) {
        t[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
    }
    for (k = 0; k < 16; k += 4) {  /* u[k + m]: rows k..k + 3, element 4L + m */
        u[k] = _mm512_unpacklo_epi64(t[k], t[k + 2]);
        u[k + 1] = _mm512_unpackhi_epi64(t[k], t[k + 2]);
        u[k + 2] = _mm512_unpacklo_epi64(t[k + 1], t[k + 3]);
        u[k + 3] = _mm512_unpackhi_epi64(t[k + 1], t[k + 3]);
    }
    for (k = 0; k < 4; k++) {  /* t[k], t[k + 4]: elements k, k + 8 / k + 4, k + 12 */
        t[k] = _mm512_shuffle_i32x4(u[k], u[k + 4], 0x88);
        t[k + 4] = _mm512_shuffle_i32x4(u[k], u[k + 4], 0xDD);
        t[k + 8] = _mm512_shuffle_i32x4(u[k + 8], u[k + 12], 0x88);
        t[k + 12] = _mm512_shuffle_i32x4(u[k + 8], u[k + 12], 0xDD);
    }
    for (k = 0; k < 8; k++) {  /* rows k and k + 8 */
        r[k] = _mm512_shuffle_i32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_i32x4(t[k], t[k + 8], 0xDD);
    }
}

/* A tile of w-byte elements, transposed straight to dst without a buffer:
 * element (i, j), i in [i0, i1) and j in [j0, j1) (each a multiple of n,
 * a block's rows and columns), from s[j - j0] + w * i (runs along rows,
 * read forwards) to d[i - i0] + w * j where a <= j - i <= b, the fill (an
 * element's bytes) elsewhere (fill NULL: nothing outside the band is
 * written, blocks across its edge stored under masks, MSTORE). A square
 * block in registers at a time (a vector V of n elements a row: 8x8 of
 * 8-byte elements and 16x16 of 4-byte ones, a row a whole line; 16x16 of
 * 2- and 1-byte ones, a row half and a quarter of one), a row of it one
 * store, STORE (where `stream`, a streaming one: each d[i] + w * j0 is
 * then aligned to a line, and a block's rows are whole lines). A block
 * across the band's edge loads its runs under masks (LOAD(m, p): lanes m
 * from p, f in the others); one wholly outside loads nothing; nothing
 * outside the band is read (a packed line's run ends at the band's edge). */
#if defined(__clang__)
#define TRILU_UNROLL _Pragma("clang loop unroll(full)")
#else
#define TRILU_UNROLL _Pragma("GCC unroll 16")
#endif
#define TRILU_TILE(V, n, f, LOAD, STORE, MSTORE, TRANSPOSE)                  \
    V r[16];                                                                 \
    ptrdiff_t i, j;                                                          \
    unsigned m;                                                              \
    int k, all;                                                              \
    for (j = j0; j < j1; j += n)                                             \
        for (i = i0; i < i1; i += n) {                                       \
            if (i >= j - a + n || i <= j - b - n) {  /* none in the band */  \
                for (k = 0; fill != NULL && k < n; k++)                      \
                    STORE(d[i - i0 + k] + w * j, f);                         \
                continue;                                                    \
            }                                                                \
            all = j + n - 1 - b <= i && j - a + 1 >= i + n;                  \
            TRILU_UNROLL                                                     \
            for (k = 0; k < n; k++) {  /* run k's rows in the band */        \
                m = all ? 0xFFFFu : trilu_lanes(j + k - b - i, j + k - a - i + 1, n); \
                r[k] = LOAD(m, s[j - j0 + k] + w * i);                       \
            }                                                                \
            TRANSPOSE(r);                                                    \
            TRILU_UNROLL                                                     \
            for (k = 0; k < n; k++)                                          \
                if (fill != NULL || all)                                     \
                    STORE(d[i - i0 + k] + w * j, r[k]);                      \
                else  /* row k's lanes in the band */                        \
                    MSTORE(d[i - i0 + k] + w * j,                            \
                           trilu_lanes(i + k + a - j, i + k + b - j + 1, n), r[k]); \
        }

#define TRILU_TILE_ARGS                                                      \
    char *const *d, const char *const *s, ptrdiff_t i0, ptrdiff_t i1,        \
    ptrdiff_t j0, ptrdiff_t j1, ptrdiff_t a, ptrdiff_t b, const char *fill,  \
    int stream

#define TRILU_LOAD8(m, p) _mm512_mask_loadu_epi64(f, (__mmask8)(m), (p))
#define TRILU_LOAD4(m, p) _mm512_mask_loadu_epi32(f, (__mmask16)(m), (p))
#define TRILU_LOAD2(m, p) _mm256_mask_loadu_epi16(f, (__mmask16)(m), (p))
#define TRILU_LOAD1(m, p) _mm_mask_loadu_epi8(f, (__mmask16)(m), (p))
#define TRILU_MSTORE8(p, m, v) _mm512_mask_storeu_epi64((p), (__mmask8)(m), (v))
#define TRILU_MSTORE4(p, m, v) _mm512_mask_storeu_epi32((p), (__mmask16)(m), (v))
#define TRILU_MSTORE2(p, m, v) _mm256_mask_storeu_epi16((p), (__mmask16)(m), (v))
#define TRILU_MSTORE1(p, m, v) _mm_mask_storeu_epi8((p), (__mmask16)(m), (v))

TRILU_AVX512 static void trilu_tile8_avx512(TRILU_TILE_ARGS)
{
    const ptrdiff_t w = 8;
    const __m512i f = _mm512_set1_epi64(fill ? trilu_word(fill) : 0);
    TRILU_TILE(__m512i, 8, f, TRILU_LOAD8, TRILU_STORE512, TRILU_MSTORE8,
               trilu_transpose8x8)
}

TRILU_AVX512 static void trilu_tile4_avx512(TRILU_TILE_ARGS)
{
    const ptrdiff_t w = 4;
    const __m512i f = _mm512_set1_epi32(fill ? (int)trilu_word32(fill) : 0);
    TRILU_TILE(__m512i, 16, f, TRILU_LOAD4, TRILU_STORE512, TRILU_MSTORE4,
               trilu_transpose16x16)
}

TRILU_AVX512 static void trilu_tile2_avx512(TRILU_TILE_ARGS)
{
    const ptrdiff_t w = 2;
    uint16_t v = 0;
    if (fill)
        memcpy(&v, fill, 2);
    const __m256i f = _mm256_set1_epi16((short)v);
    TRILU_TILE(__m256i, 16, f, TRILU_LOAD2, TRILU_STORE256I, TRILU_MSTORE2,
               trilu_transpose16x16_words)
}

TRILU_AVX512 static void trilu_tile1_avx512(TRILU_TILE_ARGS)
{
    const ptrdiff_t w = 1;
    const __m128i f = _mm_set1_epi8(fill ? fill[0] : 0);
    TRILU_TILE(__m128i, 16, f, TRILU_LOAD1, TRILU_STORE128, TRILU_MSTORE1,
               trilu_transpose16x16_bytes)
}

/* squareform's checked PACK, rows [i0, i1) of an n x n matrix of w-byte
 * numbers (8 or 4; rows `row` bytes apart from s, its elements contiguous):
 * row i's strict upper part to its packed line, element j at
 * line_i + w * j (line the first row's; each row's line right after the
 * one before), and compared with the transpose's, a square block and its
 * mirror in registers at a time. Return a count of numbers that differ
 * (as numpy's !=: for floats IEEE's, a NaN never equal, zeros of either
 * sign equal), nonzero where any pair does or a NaN lies on the diagonal;
 * add the diagonal's other nonzero numbers to *nonzero. A block across
 * the matrix's or the rows' edge loads under masks (nothing outside them
 * read; what is outside loads as zeros on both sides, equal) and stores
 * under masks (nothing outside the strict upper part written). */
#define TRILU_CHECK_BLOCK(n, LOAD, MSTORE, NEQ, TRANSPOSE, umask, lmask, smask) \
    for (k = 0; k < n; k++) {                                                \
        u[k] = LOAD(umask, s + (i + k) * row + j * w);                       \
        l[k] = LOAD(lmask, s + (j + k) * row + i * w);                       \
    }                                                                        \
    TRANSPOSE(l);                                                            \
    differ = 0;                                                              \
    for (k = 0; k < n; k++) {                                                \
        differ |= NEQ(u[k], l[k]);                                           \
        MSTORE(lines[k] + j * w, smask, u[k]);                               \
    }                                                                        \
    unequal += __builtin_popcount(differ);

#define TRILU_CHECK_PACK(n, T, LOADZ, MSTORE, NEQ, TRANSPOSE)                 \
    __m512i u[n], l[n];                                                      \
    char *lines[n];                                                          \
    ptrdiff_t i, j, k, rows, unequal = 0;                                    \
    const unsigned all = (1u << n) - 1;                                      \
    unsigned rm, cm, differ;                                                 \
    T x;                                                                     \
    for (i = i0; i < i1; i += n) {                                           \
        rows = i1 - i < n ? i1 - i : n;                                      \
        rm = trilu_lanes(0, rows, n);                                        \
        for (k = 0; k < n; k++) {  /* (rows past i1: none stored) */         \
            lines[k] = line;                                                 \
            if (k < rows)                                                    \
                line += (cols - 2 - i - k) * w;  /* the next row's */        \
        }                                                                    \
        for (j = i; j < cols; j += n) {                                      \
            if (rows == n && j > i && j + n <= cols) {  /* all inside */     \
                TRILU_CHECK_BLOCK(n, LOADZ, MSTORE, NEQ, TRANSPOSE, all, all, all) \
                continue;                                                    \
            }                                                                \
            cm = trilu_lanes(0, cols - j, n);                                \
            TRILU_CHECK_BLOCK(n, LOADZ, MSTORE, NEQ, TRANSPOSE,              \
                              k < rows ? cm : 0, j + k < cols ? rm : 0,      \
                              k < rows ? cm & ~trilu_lanes(0, i + k + 1 - j, n) : 0) \
        }                                                                    \
        for (k = 0; k < rows; k++) {  /* the diagonal */                     \
            memcpy(&x, s + (i + k) * (row + w), sizeof(T));                  \
            *nonzero += x != 0 && x == x;  /* (a NaN: counted unequal) */    \
        }                                                                    \
    }                                                                        \
    return unequal;

#define TRILU_CHECK_ARGS                                                     \
    char *line, const char *s, ptrdiff_t row, ptrdiff_t cols, ptrdiff_t i0,  \
    ptrdiff_t i1, ptrdiff_t *nonzero

#define TRILU_NEQ_PD(u, v)                                                   \
    _mm512_cmp_pd_mask(_mm512_castsi512_pd(u), _mm512_castsi512_pd(v), _CMP_NEQ_UQ)
#define TRILU_NEQ_PS(u, v)                                                   \
    _mm512_cmp_ps_mask(_mm512_castsi512_ps(u), _mm512_castsi512_ps(v), _CMP_NEQ_UQ)

/* One of them: w-byte numbers in blocks of n x n, their type T. */
#define TRILU_CHECK_FUNCTION(name, n, width, T, LOADZ, MSTORE, NEQ, TRANSPOSE) \
    TRILU_AVX512 static ptrdiff_t name(TRILU_CHECK_ARGS)                     \
    {                                                                        \
        const ptrdiff_t w = width;                                           \
        TRILU_CHECK_PACK(n, T, LOADZ, MSTORE, NEQ, TRANSPOSE)                \
    }

TRILU_CHECK_FUNCTION(trilu_check_pack8f_avx512, 8, 8, double, _mm512_maskz_loadu_epi64,
                     TRILU_MSTORE8, TRILU_NEQ_PD, trilu_transpose8x8)
TRILU_CHECK_FUNCTION(trilu_check_pack8i_avx512, 8, 8, uint64_t, _mm512_maskz_loadu_epi64,
                     TRILU_MSTORE8, _mm512_cmpneq_epi64_mask, trilu_transpose8x8)
TRILU_CHECK_FUNCTION(trilu_check_pack4f_avx512, 16, 4, float, _mm512_maskz_loadu_epi32,
                     TRILU_MSTORE4, TRILU_NEQ_PS, trilu_transpose16x16)
TRILU_CHECK_FUNCTION(trilu_check_pack4i_avx512, 16, 4, uint32_t, _mm512_maskz_loadu_epi32,
                     TRILU_MSTORE4, _mm512_cmpneq_epi32_mask, trilu_transpose16x16)

/* The one of the four for w-byte numbers, floats or not. */
static ptrdiff_t trilu_check_pack_avx512(ptrdiff_t w, int floats, TRILU_CHECK_ARGS)
{
    if (w == 8)
        return (floats ? trilu_check_pack8f_avx512 : trilu_check_pack8i_avx512)(
            line, s, row, cols, i0, i1, nonzero);
    return (floats ? trilu_check_pack4f_avx512 : trilu_check_pack4i_avx512)(
        line, s, row, cols, i0, i1, nonzero);
}

/* CPUID says so, and the OS saves the registers (libgcc and compiler-rt
 * check XGETBV for that). */
static int trilu_avx2_usable(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

static int trilu_avx512_usable(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("bmi2");
}

#else   /* never called: */
static void trilu_and_avx2(char *d, const char *s, const char *mask,
                           const char *fill, size_t n)
{
    (void)d; (void)s; (void)mask; (void)fill; (void)n;
}

static void trilu_and_avx512(char *d, const char *s, const char *mask,
                             const char *fill, size_t n)
{
    (void)d; (void)s; (void)mask; (void)fill; (void)n;
}

static void trilu_edge_rows_avx2(char *d, const char *s, ptrdiff_t dst_row,
                                 ptrdiff_t src_row, ptrdiff_t i0, ptrdiff_t i1,
                                 ptrdiff_t a, ptrdiff_t b, ptrdiff_t cols,
                                 ptrdiff_t w, const char *fill)
{
    (void)d; (void)s; (void)dst_row; (void)src_row; (void)i0; (void)i1;
    (void)a; (void)b; (void)cols; (void)w; (void)fill;
}

static ptrdiff_t trilu_transpose4_avx2(char *t, ptrdiff_t line,
                                       const char *const *s, ptrdiff_t step,
                                       ptrdiff_t lo, ptrdiff_t hi)
{
    (void)t; (void)line; (void)s; (void)step; (void)hi;
    return lo;
}

static ptrdiff_t trilu_transpose8_avx2(char *t, ptrdiff_t line,
                                       const char *const *s, ptrdiff_t lo,
                                       ptrdiff_t hi)
{
    (void)t; (void)line; (void)s; (void)hi;
    return lo;
}

static ptrdiff_t trilu_transpose_words_avx2(char *t, ptrdiff_t line,
                                            const char *const *s, ptrdiff_t lo,
                                            ptrdiff_t hi)
{
    (void)t; (void)line; (void)s; (void)hi;
    return lo;
}

static ptrdiff_t trilu_transpose_bytes_avx2(char *t, ptrdiff_t line,
                                            const char *const *s, ptrdiff_t lo,
                                            ptrdiff_t hi)
{
    (void)t; (void)line; (void)s; (void)hi;
    return lo;
}

static void trilu_rows_avx512(char *d, const char *s, ptrdiff_t dst_row,
                              ptrdiff_t src_row, ptrdiff_t i0, ptrdiff_t i1,
                              ptrdiff_t a, ptrdiff_t b, ptrdiff_t cols,
                              ptrdiff_t w, const char *fill)
{
    (void)d; (void)s; (void)dst_row; (void)src_row; (void)i0; (void)i1;
    (void)a; (void)b; (void)cols; (void)w; (void)fill;
}

static void trilu_line_rows_avx512(char *d, const char *line, ptrdiff_t dst_row,
                                   ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t a,
                                   ptrdiff_t b, ptrdiff_t cols, ptrdiff_t w,
                                   const char *fill)
{
    (void)d; (void)line; (void)dst_row; (void)i0; (void)i1; (void)a; (void)b;
    (void)cols; (void)w; (void)fill;
}

static void trilu_along_rows_avx512(char *d, const char *line, ptrdiff_t dst_row,
                                    ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t a,
                                    ptrdiff_t b, ptrdiff_t xa, ptrdiff_t xb,
                                    ptrdiff_t cols, ptrdiff_t w, const char *fill)
{
    (void)d; (void)line; (void)dst_row; (void)i0; (void)i1; (void)a; (void)b;
    (void)xa; (void)xb; (void)cols; (void)w; (void)fill;
}

static void trilu_pack_rows_avx512(char *line, const char *s, ptrdiff_t src_row,
                                   ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t a,
                                   ptrdiff_t b, ptrdiff_t cols, ptrdiff_t w)
{
    (void)line; (void)s; (void)src_row; (void)i0; (void)i1; (void)a; (void)b;
    (void)cols; (void)w;
}

#define TRILU_TILE_STUB(name)                                                  \
    static void name(char *const *d, const char *const *s, ptrdiff_t i0,       \
                     ptrdiff_t i1, ptrdiff_t j0, ptrdiff_t j1, ptrdiff_t a,     \
                     ptrdiff_t b, const char *fill, int stream)                 \
    {                                                                          \
        (void)d; (void)s; (void)i0; (void)i1; (void)j0; (void)j1; (void)a;     \
        (void)b; (void)fill; (void)stream;                                     \
    }
TRILU_TILE_STUB(trilu_tile8_avx2)
TRILU_TILE_STUB(trilu_tile8_avx512)
TRILU_TILE_STUB(trilu_tile4_avx512)
TRILU_TILE_STUB(trilu_tile2_avx512)
TRILU_TILE_STUB(trilu_tile1_avx512)

static ptrdiff_t trilu_check_pack_avx512(ptrdiff_t w, int floats, char *line,
                                         const char *s, ptrdiff_t row,
                                         ptrdiff_t cols, ptrdiff_t i0, ptrdiff_t i1,
                                         ptrdiff_t *nonzero)
{
    (void)w; (void)floats; (void)line; (void)s; (void)row; (void)cols; (void)i0;
    (void)i1; (void)nonzero;
    return 0;
}

static int trilu_avx2_usable(void)
{
    return 0;
}

static int trilu_avx512_usable(void)
{
    return 0;
}

#endif

#endif /* TRILU_SIMD_H */
