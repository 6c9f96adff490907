/* Rows written with non-temporal (streaming) stores, for large results.
 *
 * A normal store first reads its cache line from memory, so copying a byte
 * moves three (read the source, read the destination line, write it back) and
 * zeroing one moves two. A streaming store writes whole lines straight to
 * memory: two and one. Once the input and the result no longer fit in the
 * last-level cache, that cuts a triangle's memory traffic by about 40%, and
 * glibc's memcpy and memset stream only from a threshold it derives from the
 * cache size, several times larger. Below that size normal stores win,
 * since the lines they fetch are already in the cache.
 *
 * trilu_stream_row writes byte j of a row as s[j] for lo <= j < hi and the
 * fill elsewhere, with 16-byte streaming stores where d is 16-byte aligned and
 * normal stores for the unaligned ends. It reads s[lo, hi) only: s may be a
 * packed vector's line, with nothing around it. The fill is `pat`, 32 bytes of it
 * from the row's first byte: one byte value, or an element whose width
 * divides 16, so that every 16-byte chunk of the row finds its bytes at
 * pat + (its offset % 16). A thread that streamed calls
 * trilu_stream_fence before it reports its work done: streaming stores are not
 * ordered with the stores that follow them. Where SSE2 is missing
 * (TRILU_STREAM 0), rows are written with memset and memcpy.
 */
#ifndef TRILU_STREAM_H
#define TRILU_STREAM_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#define TRILU_STREAM 1
#include <emmintrin.h>
#else
#define TRILU_STREAM 0
#endif

/* Bytes [a, b) of a row get the fill, 16 at a time from pat. */
static void trilu_fill_part(char *d, size_t a, size_t b, const char *pat)
{
    size_t n;
    for (; a < b; a += n) {
        n = b - a < 16 ? b - a : 16;
        memcpy(d + a, pat + a % 16, n);
    }
}

/* Bytes [a, b) of the row with normal stores: fill, kept, fill. Empty parts
 * are skipped rather than passed on: glibc's AVX-512 memset and memcpy store
 * even an empty length with a masked store, which flushes the half-written
 * line being streamed. */
static void trilu_row_part(char *d, const char *s, size_t lo, size_t hi,
                           size_t a, size_t b, const char *pat)
{
    size_t x = lo < a ? a : (lo > b ? b : lo);
    size_t y = hi < x ? x : (hi > b ? b : hi);
    if (x > a)
        trilu_fill_part(d, a, x, pat);
    if (y > x)
        memcpy(d + x, s + x, y - x);
    if (b > y)
        trilu_fill_part(d, y, b, pat);
}

#if TRILU_STREAM

static void trilu_stream_row(char *d, const char *s, size_t lo, size_t hi,
                             size_t n, const char *fill)
{
    size_t off = (16 - (uintptr_t)d % 16) % 16, end, x, y;
    const __m128i pat = _mm_loadu_si128((const __m128i *)(fill + off % 16));
    __m128i v;
    char part[16];
    if (off > n)
        off = n;
    end = off + (n - off) / 16 * 16;
    trilu_row_part(d, s, lo, hi, 0, off, fill);
    for (; off < end && off + 16 <= lo; off += 16)     /* fill before lo */
        _mm_stream_si128((__m128i *)(d + off), pat);
    while (off < end && off < hi) {
        if (off < lo || off + 16 > hi) {    /* the chunk around lo or hi:
                                               its kept bytes over the fill */
            x = lo > off ? lo - off : 0;
            y = hi < off + 16 ? hi - off : 16;
            _mm_storeu_si128((__m128i *)part, pat);
            memcpy(part + x, s + off + x, y - x);
            _mm_stream_si128((__m128i *)(d + off),
                             _mm_loadu_si128((const __m128i *)part));
            off += 16;
        } else {                            /* kept chunks */
            for (; off < end && off + 16 <= hi; off += 16) {
                v = _mm_loadu_si128((const __m128i *)(s + off));
                _mm_stream_si128((__m128i *)(d + off), v);
            }
        }
    }
    for (; off < end; off += 16)                       /* fill from hi */
        _mm_stream_si128((__m128i *)(d + off), pat);
    trilu_row_part(d, s, lo, hi, end, n, fill);
}

/* d = s & mask | fill over n bytes (fill NULL: zeros), the keep-mask and
 * fill-mask of small matrices. */
static void trilu_stream_and(char *d, const char *s, const char *mask,
                             const char *fill, size_t n)
{
    size_t t, head = (16 - (uintptr_t)d % 16) % 16;
    __m128i v;
    if (head > n)
        head = n;
    for (t = 0; t < head; t++)
        d[t] = (char)((s[t] & mask[t]) | (fill ? fill[t] : 0));
    for (; t + 16 <= n; t += 16) {
        v = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + t)),
                          _mm_loadu_si128((const __m128i *)(mask + t)));
        if (fill)
            v = _mm_or_si128(v, _mm_loadu_si128((const __m128i *)(fill + t)));
        _mm_stream_si128((__m128i *)(d + t), v);
    }
    for (; t < n; t++)
        d[t] = (char)((s[t] & mask[t]) | (fill ? fill[t] : 0));
}

static void trilu_stream_fence(void)
{
    _mm_sfence();
}

#else

static void trilu_stream_row(char *d, const char *s, size_t lo, size_t hi,
                             size_t n, const char *fill)
{
    trilu_row_part(d, s, lo, hi, 0, n, fill);
}

static void trilu_stream_and(char *d, const char *s, const char *mask,
                             const char *fill, size_t n)
{
    size_t t;
    for (t = 0; t < n; t++)
        d[t] = (char)((s[t] & mask[t]) | (fill ? fill[t] : 0));
}

static void trilu_stream_fence(void)
{
}

#endif /* TRILU_STREAM */

#endif /* TRILU_STREAM_H */
