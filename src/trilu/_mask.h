/* The keep-mask AND of small matrices, 32 bytes at a time where the CPU has
 * AVX2: d = s & mask | fill.
 *
 * The kernel's portable loop compiles to 16-byte SSE2 loads and stores on
 * x86-64, the baseline every wheel targets; twice the width halves the loads
 * and stores of a pass that is bound by them when its data is in cache. So
 * this one function is compiled for AVX2 and chosen at import when the CPU
 * and the OS support it, with GCC and Clang on x86-64; TRILU_AVX2=0 in the
 * environment keeps the portable loop. Elsewhere (MSVC, arm64)
 * trilu_avx2_usable is 0 and the portable loop always runs.
 */
#ifndef TRILU_MASK_H
#define TRILU_MASK_H

#include <stddef.h>
#include <string.h>

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

/* CPUID says AVX2, and the OS saves the 256-bit registers (libgcc and
 * compiler-rt check XGETBV for that). */
static int trilu_avx2_usable(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

#else
static void trilu_and_avx2(char *d, const char *s, const char *mask,
                           const char *fill, size_t n)
{
    (void)d; (void)s; (void)mask; (void)fill; (void)n;   /* never called */
}

static int trilu_avx2_usable(void)
{
    return 0;
}

#endif

/* The masks of a thread's last call, kept for its next: a loop over matrices
 * of one shape and band builds them once. A job's masks depend on the key
 * the kernel writes beside them (its shape, band, element width and fill);
 * they are read by the pool's threads only while the calling thread waits
 * for them, so one slot a thread needs no lock. TRILU_MASK_BYTES bounds the
 * masks of any job that has some: BAND_MASK's crossed rows, MATRICES' block. */
#define TRILU_MASK_BYTES 65536
#define TRILU_MASK_KEY_BYTES 128

typedef struct {
    char key[TRILU_MASK_KEY_BYTES];
    char masks[TRILU_MASK_BYTES];
    size_t builds;             /* how many times the masks were built here */
} trilu_mask_slot;

#if defined(_MSC_VER)
#define TRILU_THREAD_LOCAL __declspec(thread)
#else
#define TRILU_THREAD_LOCAL _Thread_local
#endif

/* This thread's slot (its key all zeros until a job fills it). */
static inline trilu_mask_slot *trilu_mask_slot_mine(void)
{
    static TRILU_THREAD_LOCAL trilu_mask_slot slot;
    return &slot;
}

#endif /* TRILU_MASK_H */
