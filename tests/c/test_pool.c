/* The thread pool, count and per-thread cap (_threads.h), the streaming stores
 * and their fill patterns (_stream.h), the vector loops (_simd.h: the AVX2
 * and AVX-512 keep-mask ANDs, AVX2's triu and tril rows, the AVX-512 rows)
 * and the threads' slots of kept masks (_mask.h), tested in C, without
 * Python.
 * tests/kernel/test_pool_c.py builds and runs it with this machine's C
 * compiler; `nox -s windows` also builds it with mingw-w64 (run under wine)
 * and with clang in MSVC mode (the _MSC_VER branches).
 *
 *   test_pool [calls]     (default 100000 back-to-back calls)
 *
 * Every unit of a job must be done exactly once, and done when
 * trilu_parallel returns: back to back, after the workers have gone to sleep,
 * and with several threads calling at once (only one gets the pool; the
 * others run alone). Prints one line per check and "ok" at the end; exits 1
 * at the first failure.
 */
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE            /* as Python.h does: sched_getcpu, CPU sets */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef intptr_t Py_ssize_t;   /* what the headers take from Python.h */

#include "_threads.h"
#include "_stream.h"
#include "_mask.h"
#include "_simd.h"

#ifdef _WIN32
/* The names windows.h would turn into macros without WIN32_LEAN_AND_MEAN
 * and NOMINMAX: this file does not compile if it does. (near and far stay
 * defined as empty macros by minwindef.h whatever the settings.) */
static int min(int a, int b) { return a < b ? a : b; }
static int max(int a, int b) { return a > b ? a : b; }
static int small = 1;
#define trilu_sleep_ms(ms) Sleep(ms)
#else
static int min(int a, int b) { return a < b ? a : b; }
static int max(int a, int b) { return a > b ? a : b; }
static int small = 1;
static void trilu_sleep_ms(int ms)
{
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
}
#endif

#if defined(_MSC_VER) && defined(TRILU_TEST_NO_CRT)
/* Built by clang in MSVC mode and linked to msvcrt.dll alone, without the
 * MSVC runtime's startup code (not to be had on Linux): the symbol floating
 * point code expects, and an entry point that does what the startup code
 * would, through msvcrt's own exports. */
int _fltused = 0;
/* The TLS directory the runtime's tlssup.obj would supply (the linker finds
 * it by its name): with it the loader gives each thread its own copy of the
 * .tls section, from _tls_start to _tls_end, where the compiler puts the
 * __declspec(thread) data (the thread cap). No callbacks. */
unsigned long _tls_index = 0;
__attribute__((section(".tls"))) char _tls_start = 0;
__attribute__((section(".tls$ZZZ"))) char _tls_end = 0;
static const PIMAGE_TLS_CALLBACK no_tls_callbacks[1] = {NULL};
const IMAGE_TLS_DIRECTORY _tls_used = {
    .StartAddressOfRawData = (ULONG_PTR)&_tls_start,
    .EndAddressOfRawData = (ULONG_PTR)&_tls_end,
    .AddressOfIndex = (ULONG_PTR)&_tls_index,
    .AddressOfCallBacks = (ULONG_PTR)no_tls_callbacks,
};
int main(int argc, char **argv);
extern int __cdecl __getmainargs(int *argc, char ***argv, char ***env,
                                 int wildcard, int *startinfo);

void __cdecl trilu_test_entry(void)
{
    int argc = 0, startinfo = 0;
    char **argv = NULL, **env = NULL;
    __getmainargs(&argc, &argv, &env, 0, &startinfo);
    exit(main(argc, argv));
}
#endif

static int failures = 0;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);    \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
            fflush(stdout);                                \
            failures++;                                    \
            exit(1);                                       \
        }                                                  \
    } while (0)

/* --- a job: units claimed in grains, each unit counted ---------------------- */

typedef struct {
    Py_ssize_t next;           /* the next unclaimed unit (atomic) */
    Py_ssize_t units, grain;
    unsigned char *done;       /* done[i]: how many times unit i was done */
    int *ran;                  /* ran[t]: how many times task t ran */
} job_t;

typedef struct {
    job_t *job;
    int index;
} task_t;

static void run_task(void *p)
{
    task_t *t = (task_t *)p;
    job_t *job = t->job;
    Py_ssize_t start, i, stop;
    job->ran[t->index]++;
    for (;;) {
        start = trilu_fetch_add(&job->next, job->grain);
        if (start >= job->units)
            break;
        stop = start + job->grain < job->units ? start + job->grain : job->units;
        for (i = start; i < stop; i++)
            job->done[i]++;
    }
}

/* A job of `units` units over n tasks; every unit done exactly once, every
 * task run at most once, task 0 exactly once, all by the time it returns. */
static void one_call(Py_ssize_t units, Py_ssize_t grain, int n, const char *what)
{
    job_t job;
    task_t tasks[TRILU_MAX_THREADS];
    void *args[TRILU_MAX_THREADS];
    int ran[TRILU_MAX_THREADS];
    Py_ssize_t i;
    int t;

    job.next = 0;
    job.units = units;
    job.grain = grain;
    job.done = (unsigned char *)calloc((size_t)(units > 0 ? units : 1), 1);
    job.ran = ran;
    CHECK(job.done != NULL, "out of memory");
    for (t = 0; t < n; t++) {
        tasks[t].job = &job;
        tasks[t].index = t;
        args[t] = &tasks[t];
        ran[t] = 0;
    }
    trilu_parallel(run_task, args, n);
    for (i = 0; i < units; i++)
        CHECK(job.done[i] == 1, "%s: unit %ld of %ld done %d times (%d tasks)",
              what, (long)i, (long)units, job.done[i], n);
    CHECK(ran[0] == 1, "%s: task 0 ran %d times", what, ran[0]);
    for (t = 1; t < n; t++)
        CHECK(ran[t] <= 1, "%s: task %d ran %d times", what, t, ran[t]);
    free(job.done);
}

/* --- the checks ------------------------------------------------------------ */

static void check_layout(void)
{
    CHECK(sizeof(trilu_worker) % 64 == 0,
          "a worker is %d bytes, not whole 64-byte lines", (int)sizeof(trilu_worker));
    CHECK((uintptr_t)&trilu_pool.workers[1] % 64 == 0,
          "workers do not start on a 64-byte line");
    CHECK((uintptr_t)&trilu_pool.workers[2].offered
              - (uintptr_t)&trilu_pool.workers[1].offered >= 64,
          "two workers' offered flags share a cache line");
    CHECK(min(2, 3) == 2 && max(2, 3) == 3 && small == 1, "helpers");
    printf("layout: %d-byte workers on their own cache lines\n",
           (int)sizeof(trilu_worker));
}

static void check_thread_count(void)
{
    trilu_threads_set(7);
    CHECK(trilu_threads_get() == 7, "thread count %d, not 7", trilu_threads_get());
    trilu_threads_set(1);
    CHECK(trilu_threads_get() == 1, "thread count %d, not 1", trilu_threads_get());
    /* the exported pair threadpoolctl calls: clamped to 1..TRILU_MAX_THREADS */
    trilu_set_num_threads(0);
    CHECK(trilu_get_num_threads() == 1, "count %d after 0", trilu_get_num_threads());
    trilu_set_num_threads(1000);
    CHECK(trilu_get_num_threads() == TRILU_MAX_THREADS, "count %d after 1000",
          trilu_get_num_threads());
    trilu_set_num_threads(1);
    printf("thread count: set and read back, exported pair clamped\n");
}

/* The count as another thread sees it (its own cap never set). */
#ifdef _WIN32
static unsigned __stdcall read_mine(void *p)
#else
static void *read_mine(void *p)
#endif
{
    *(int *)p = trilu_threads_mine();
#ifdef _WIN32
    return 0;
#else
    return NULL;
#endif
}

static int mine_on_another_thread(void)
{
    int mine = 0;
#ifdef _WIN32
    HANDLE h = (HANDLE)_beginthreadex(NULL, 0, read_mine, &mine, 0, NULL);
    CHECK(h != 0, "cannot start a thread");
    WaitForSingleObject(h, INFINITE);
    CloseHandle(h);
#else
    pthread_t t;
    CHECK(pthread_create(&t, NULL, read_mine, &mine) == 0, "cannot start a thread");
    pthread_join(t, NULL);
#endif
    return mine;
}

/* A thread's cap lowers the count its own calls use, never raises it, and
 * leaves every other thread's count alone. */
static void check_thread_cap(void)
{
    int other;
    trilu_threads_set(6);
    CHECK(trilu_cap_threads(2) == 0, "a thread's first cap replaced another");
    CHECK(trilu_threads_mine() == 2, "count %d under a cap of 2",
          trilu_threads_mine());
    other = mine_on_another_thread();
    CHECK(other == 6, "another thread's count %d under this thread's cap", other);
    CHECK(trilu_cap_threads(10) == 2, "the cap replaced was not 2");
    CHECK(trilu_threads_mine() == 6, "count %d under a cap of 10 over 6",
          trilu_threads_mine());
    CHECK(trilu_cap_threads(0) == 10, "the cap replaced was not 10");
    CHECK(trilu_threads_mine() == 6, "count %d with no cap", trilu_threads_mine());
    trilu_threads_set(1);
    printf("thread cap: the calling thread's alone, never above the count\n");
}

/* Another thread's slot of kept masks: where it is, and its builds. */
#ifdef _WIN32
static unsigned __stdcall read_slot(void *p)
#else
static void *read_slot(void *p)
#endif
{
    trilu_mask_slot *slot = trilu_mask_slot_mine();
    ((uintptr_t *)p)[0] = (uintptr_t)slot;
    ((uintptr_t *)p)[1] = slot->builds;
#ifdef _WIN32
    return 0;
#else
    return NULL;
#endif
}

/* Each thread keeps masks in a slot of its own (_mask.h), apart from every
 * other thread's. */
static void check_mask_slots(void)
{
    uintptr_t other[2] = {0, 1};
    trilu_mask_slot *mine = trilu_mask_slot_mine();
    CHECK(mine == trilu_mask_slot_mine(), "a thread's slot moved");
    mine->builds = 5;
#ifdef _WIN32
    HANDLE h = (HANDLE)_beginthreadex(NULL, 0, read_slot, other, 0, NULL);
    CHECK(h != 0, "cannot start a thread");
    WaitForSingleObject(h, INFINITE);
    CloseHandle(h);
#else
    pthread_t t;
    CHECK(pthread_create(&t, NULL, read_slot, other) == 0, "cannot start a thread");
    pthread_join(t, NULL);
#endif
    CHECK(other[0] != 0 && other[0] != (uintptr_t)mine,
          "another thread's slot is this thread's");
    CHECK(other[1] == 0, "another thread's slot has %lu builds",
          (unsigned long)other[1]);
    CHECK(mine->builds == 5, "this thread's slot changed");
    mine->builds = 0;
    printf("mask slots: one a thread\n");
}

static unsigned long long rng_state = 0x9E3779B97F4A7C15ULL;

static unsigned long rnd(unsigned long n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned long)(rng_state % n);
}

static void check_back_to_back(long calls)
{
    long c;
    for (c = 0; c < calls; c++) {
        int n = 2 + (int)rnd(7);                  /* 2-8 tasks on 2+ CPUs */
        Py_ssize_t units = (Py_ssize_t)rnd(c % 64 == 0 ? 200000 : 3000);
        one_call(units, 1 + (Py_ssize_t)rnd(64), n, "back to back");
    }
    one_call(0, 1, 4, "empty job");
    one_call(10, 1, 1, "one task");
    one_call(1000, 3, TRILU_MAX_THREADS, "64 tasks");
    printf("back to back: %ld calls, %d workers started\n", calls, trilu_pool.started);
}

static void check_after_idle(void)
{
    static const int pause_ms[] = {0, 1, 5, 20, 50, 1, 0, 100, 2, 30};
    int i;
    for (i = 0; i < (int)(sizeof pause_ms / sizeof pause_ms[0]); i++) {
        trilu_sleep_ms(pause_ms[i]);           /* past the workers' spin: asleep */
        one_call(50000 + (Py_ssize_t)rnd(50000), 16, 2 + i % 4, "after idle");
    }
    printf("after idle: 10 calls after pauses of 0-100 ms\n");
}

/* Several threads calling at once: one gets the pool, the others run alone. */
#define CALLERS 4

typedef struct {
    long calls;
    unsigned long long seed;
} caller_t;

#ifdef _WIN32
static unsigned __stdcall caller_main(void *p)
#else
static void *caller_main(void *p)
#endif
{
    caller_t *c = (caller_t *)p;
    long i;
    unsigned long long s = c->seed;
    for (i = 0; i < c->calls; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        one_call((Py_ssize_t)((s >> 33) % 20000), 1 + (Py_ssize_t)((s >> 20) % 32),
                 2 + (int)((s >> 50) % 5), "concurrent");
    }
#ifdef _WIN32
    return 0;
#else
    return NULL;
#endif
}

static void check_concurrent(long calls)
{
    caller_t callers[CALLERS];
    int i;
#ifdef _WIN32
    HANDLE h[CALLERS];
    for (i = 0; i < CALLERS; i++) {
        callers[i].calls = calls;
        callers[i].seed = 1000003ULL * (unsigned long long)(i + 1);
        h[i] = (HANDLE)_beginthreadex(NULL, 0, caller_main, &callers[i], 0, NULL);
        CHECK(h[i] != 0, "cannot start a caller thread");
    }
    WaitForMultipleObjects(CALLERS, h, TRUE, INFINITE);
    for (i = 0; i < CALLERS; i++)
        CloseHandle(h[i]);
#else
    pthread_t t[CALLERS];
    for (i = 0; i < CALLERS; i++) {
        callers[i].calls = calls;
        callers[i].seed = 1000003ULL * (unsigned long long)(i + 1);
        CHECK(pthread_create(&t[i], NULL, caller_main, &callers[i]) == 0,
              "cannot start a caller thread");
    }
    for (i = 0; i < CALLERS; i++)
        pthread_join(t[i], NULL);
#endif
    printf("concurrent: %d threads x %ld calls\n", CALLERS, calls);
}

/* A row as trilu_stream_row and trilu_row_part must leave bytes [a, b) of it:
 * s[j] for lo <= j < hi, else the fill pattern's byte j % 16. */
static void expect_row(char *d, const char *s, size_t lo, size_t hi, size_t a,
                       size_t b, const char *pat)
{
    size_t j;
    for (j = a; j < b; j++)
        d[j] = lo <= j && j < hi ? s[j] : pat[j % 16];
}

/* Rows [i0, rows) of a band (a, b), each `row` bytes apart from want and
 * src, as a band's row writer must leave them (expect_row): row i keeps the
 * columns [i + a, i + b + 1) of `cols` elements of w bytes, clipped. */
static void expect_band(char *want, const char *src, ptrdiff_t row, ptrdiff_t i0,
                        ptrdiff_t rows, ptrdiff_t a, ptrdiff_t b, ptrdiff_t cols,
                        ptrdiff_t w, const char *pat)
{
    ptrdiff_t i, lo, hi;
    for (i = i0; i < rows; i++) {
        lo = i + a < 0 ? 0 : (i + a > cols ? cols : i + a);
        hi = i + b + 1 < lo ? lo : (i + b + 1 > cols ? cols : i + b + 1);
        expect_row(want + i * row, src + i * row, (size_t)(lo * w), (size_t)(hi * w),
                   0, (size_t)(cols * w), pat);
    }
}

/* Rows [i0, rows) of a band's spans, packed: each right after the one
 * before, from lines on; returns the bytes packed. */
static ptrdiff_t pack_band(char *lines, const char *src, ptrdiff_t row, ptrdiff_t i0,
                           ptrdiff_t rows, ptrdiff_t a, ptrdiff_t b, ptrdiff_t cols,
                           ptrdiff_t w)
{
    ptrdiff_t i, lo, hi, at = 0;
    for (i = i0; i < rows; i++) {
        lo = i + a < 0 ? 0 : (i + a > cols ? cols : i + a);
        hi = i + b + 1 < lo ? lo : (i + b + 1 > cols ? cols : i + b + 1);
        memcpy(lines + at, src + i * row + lo * w, (size_t)((hi - lo) * w));
        at += (hi - lo) * w;
    }
    return at;
}

/* The fill patterns: 32 bytes from the row's first byte, one element repeated
 * whose width divides 16 (_stream.h). Zeros and one byte value (the fills a
 * memset writes), then elements of 2 to 16 bytes, each byte of one its own. */
#define PATTERNS 6
static const int pattern_width[PATTERNS] = {1, 1, 2, 4, 8, 16};

static void make_pattern(char *pat, int p)
{
    int i;
    for (i = 0; i < 32; i++)
        pat[i] = p == 0 ? 0 : (char)(0xA1 + i % pattern_width[p]);
}

/* Streaming stores and the plain row writer against expect_row, every
 * alignment and cut, with each fill pattern; the plain writer also over parts
 * [a, b) of the row, the bytes around them left alone. Then the mask ANDs
 * without and with a fill-mask (the fill where the keep-mask is 0). */
static void check_stream(void)
{
    enum { N = 200 };
    static char src[N + 64], got[N + 64], want[N + 64], mask[N + 64];
    static char fill[N + 64], pat[32];
    const char *fills[2] = {NULL, fill};
    size_t n, lo, hi, off, i, part, a, b, cases = 0;
    int f, p;
    for (i = 0; i < sizeof src; i++) {
        src[i] = (char)(1 + rnd(255));
        mask[i] = rnd(2) ? (char)0xFF : 0;
        fill[i] = mask[i] ? 0 : (char)(1 + rnd(255));
    }
    for (p = 0; p < PATTERNS; p++) {
        make_pattern(pat, p);
        for (off = 0; off < 16; off++)
            for (n = 0; n <= 70; n += 1 + (n > 40) * 5)
                for (lo = 0; lo <= n; lo += 1 + (lo > 20) * 3)
                    for (hi = lo; hi <= n; hi += 1 + (hi > 20) * 3) {
                        memset(got, 0x5A, sizeof got);
                        memset(want, 0x5A, sizeof want);
                        expect_row(want + off, src, lo, hi, 0, n, pat);
                        trilu_stream_row(got + off, src, lo, hi, n, pat);
                        CHECK(memcmp(got, want, sizeof got) == 0,
                              "stream_row n=%d lo=%d hi=%d off=%d pattern %d",
                              (int)n, (int)lo, (int)hi, (int)off, p);
                        for (part = 0; part < 3; part++) {   /* whole, head, middle */
                            a = part == 2 ? n / 4 : 0;
                            b = part == 0 ? n : n - n / 3;
                            memset(got, 0x5A, sizeof got);
                            memset(want, 0x5A, sizeof want);
                            expect_row(want + off, src, lo, hi, a, b, pat);
                            trilu_row_part(got + off, src, lo, hi, a, b, pat);
                            CHECK(memcmp(got, want, sizeof got) == 0,
                                  "row_part [%d, %d) n=%d lo=%d hi=%d off=%d "
                                  "pattern %d", (int)a, (int)b, (int)n, (int)lo,
                                  (int)hi, (int)off, p);
                        }
                        cases++;
                    }
    }
    trilu_stream_fence();
    for (f = 0; f < 2; f++)
        for (off = 0; off < 16; off++)
            for (n = 0; n <= N; n += 1 + n / 8) {
                memset(got, 0x5A, sizeof got);
                memset(want, 0x5A, sizeof want);
                trilu_stream_and(got + off, src, mask, fills[f], n);
                for (i = 0; i < n; i++)
                    want[off + i] = (char)((src[i] & mask[i]) | (f ? fill[i] : 0));
                CHECK(memcmp(got, want, sizeof got) == 0,
                      "stream_and n=%d off=%d fill=%d", (int)n, (int)off, f);
                if (trilu_avx2_usable()) {
                    memset(got, 0x5A, sizeof got);
                    trilu_and_avx2(got + off, src, mask, fills[f], n);
                    CHECK(memcmp(got, want, sizeof got) == 0,
                          "and_avx2 n=%d off=%d fill=%d", (int)n, (int)off, f);
                }
                if (trilu_avx512_usable()) {
                    memset(got, 0x5A, sizeof got);
                    trilu_and_avx512(got + off, src, mask, fills[f], n);
                    CHECK(memcmp(got, want, sizeof got) == 0,
                          "and_avx512 n=%d off=%d fill=%d", (int)n, (int)off, f);
                }
                cases++;
            }
    trilu_stream_fence();
    printf("stream and mask: %d cases, %d fill patterns (TRILU_STREAM %d, AVX2 %s, "
           "AVX-512 %s)\n", (int)cases, PATTERNS, TRILU_STREAM,
           trilu_avx2_usable() ? "used" : "not used",
           trilu_avx512_usable() ? "used" : "not used");
}

/* The AVX-512 rows of a band against expect_row, row by row: every band
 * (a, b) from far below to far above the matrix, so each of the three row
 * forms, with every element width a fill pattern allows, every alignment of
 * the rows' start, and a gap between rows that must stay untouched; the
 * same rows from packed lines (trilu_line_rows_avx512, an UNPACK's), a
 * mirror's but a band read across (trilu_along_rows_avx512), and packed
 * into lines (trilu_pack_rows_avx512), the bytes around them untouched. */
static void check_rows(void)
{
    enum { ROWS = 5, GAP = 7, MAXN = 200 };
    static char src[ROWS * (MAXN + GAP) + 64], got[ROWS * (MAXN + GAP) + 64];
    static char want[ROWS * (MAXN + GAP) + 64], pat[32];
    static char across[ROWS * (MAXN + GAP) + 64];
    static char lines[ROWS * MAXN + 64], packed[ROWS * MAXN + 64];
    static const ptrdiff_t widths[] = {1, 2, 4, 8, 16};
    ptrdiff_t cols, a, b, w, i0, n, row, off, len, xa, xb, i, lo, hi, t;
    size_t k, cases = 0;
    int p;
    if (!trilu_avx512_usable()) {
        printf("rows: AVX-512 not used\n");
        return;
    }
    for (k = 0; k < sizeof src; k++)
        src[k] = (char)(1 + rnd(255));
    for (p = 0; p < PATTERNS; p++) {
        make_pattern(pat, p);
        for (k = 0; k < 5; k++) {
            w = widths[k];
            if (p > 1 && w != pattern_width[p])
                continue;        /* an element's pattern: its own width */
            for (cols = 1; cols * w <= MAXN; cols += 1 + cols / 3)
                for (a = -ROWS - 1; a <= cols + 1; a += 1 + (a > 3) * (cols / 4))
                    for (b = a - 1; b <= cols + 1; b += 1 + (b > 3) * (cols / 4))
                        for (off = 0; off < 64; off += 13)
                            for (i0 = 0; i0 < 2; i0++) {
                                n = cols * w;
                                row = n + GAP;
                                memset(got, 0x5A, sizeof got);
                                memset(want, 0x5A, sizeof want);
                                expect_band(want + off, src, row, i0, ROWS, a, b,
                                            cols, w, pat);
                                trilu_rows_avx512(got + off + i0 * row, src + i0 * row,
                                                  row, row, i0, ROWS, a, b, cols, w,
                                                  pat);
                                CHECK(memcmp(got, want, sizeof got) == 0,
                                      "rows_avx512 cols=%d w=%d a=%d b=%d off=%d "
                                      "i0=%d pattern %d", (int)cols, (int)w, (int)a,
                                      (int)b, (int)off, (int)i0, p);
                                /* from packed lines: src's bytes, `off` into lines */
                                len = pack_band(lines + off, src, row, i0, ROWS, a, b,
                                                cols, w);
                                memset(got, 0x5A, sizeof got);
                                trilu_line_rows_avx512(got + off + i0 * row,
                                                       lines + off, row, i0, ROWS, a,
                                                       b, cols, w, pat);
                                CHECK(memcmp(got, want, sizeof got) == 0,
                                      "line_rows_avx512 cols=%d w=%d a=%d b=%d "
                                      "off=%d i0=%d pattern %d", (int)cols, (int)w,
                                      (int)a, (int)b, (int)off, (int)i0, p);
                                /* a mirror's rows, a band read across before
                                 * theirs (theirs to the end) or after it (theirs
                                 * from the start): those bytes untouched */
                                for (t = 0; t < 3 && (b >= cols || a <= -ROWS);
                                     t += 2) {
                                    xa = b >= cols ? -ROWS - 1 : b + 1 + t;
                                    xb = b >= cols ? a - 1 - t : cols + 1;
                                    memcpy(across, want, sizeof want);
                                    for (i = i0; i < ROWS; i++) {
                                        lo = i + xa < 0 ? 0
                                             : (i + xa > cols ? cols : i + xa);
                                        hi = i + xb + 1 < lo ? lo
                                             : (i + xb + 1 > cols ? cols : i + xb + 1);
                                        memset(across + off + i * row + lo * w, 0x5A,
                                               (size_t)((hi - lo) * w));
                                    }
                                    memset(got, 0x5A, sizeof got);
                                    trilu_along_rows_avx512(got + off + i0 * row,
                                                            lines + off, row, i0, ROWS,
                                                            a, b, xa, xb, cols, w, pat);
                                    CHECK(memcmp(got, across, sizeof got) == 0,
                                          "along_rows_avx512 cols=%d w=%d a=%d b=%d "
                                          "xa=%d xb=%d off=%d i0=%d pattern %d",
                                          (int)cols, (int)w, (int)a, (int)b, (int)xa,
                                          (int)xb, (int)off, (int)i0, p);
                                }
                                /* and packed into lines */
                                memset(packed, 0x5A, sizeof packed);
                                trilu_pack_rows_avx512(packed + off, src + i0 * row, row,
                                                       i0, ROWS, a, b, cols, w);
                                CHECK(memcmp(packed + off, lines + off, (size_t)len) == 0
                                      && packed[off + len] == 0x5A
                                      && (off == 0 || packed[off - 1] == 0x5A),
                                      "pack_rows_avx512 cols=%d w=%d a=%d b=%d off=%d "
                                      "i0=%d", (int)cols, (int)w, (int)a, (int)b,
                                      (int)off, (int)i0);
                                cases++;
                            }
        }
    }
    printf("rows: %d cases, AVX-512 used\n", (int)cases);
}

/* AVX2's rows of a band that all keep their end (triu's) or all their start
 * (tril's) against expect_row: rows of 32 to 512 bytes of every element
 * width a fill pattern allows, each edge from beyond one side of the matrix
 * to beyond the other, zeros (the AND) and every other fill (the blend),
 * every alignment of the rows' start, and a gap between rows that must stay
 * untouched. */
static void check_edge_rows(void)
{
    enum { ROWS = 5, GAP = 7, MAXN = TRILU_RAMP };
    static char src[ROWS * (MAXN + GAP) + 64], got[ROWS * (MAXN + GAP) + 64];
    static char want[ROWS * (MAXN + GAP) + 64], pat[32];
    static const ptrdiff_t widths[] = {1, 2, 4, 8, 16};
    ptrdiff_t cols, a, b, w, n, row, off, edge;
    size_t k, cases = 0;
    int p, end;
    if (!trilu_avx2_usable()) {
        printf("edge rows: AVX2 not used\n");
        return;
    }
    for (k = 0; k < sizeof src; k++)
        src[k] = (char)(1 + rnd(255));
    for (p = 0; p < PATTERNS; p++) {
        make_pattern(pat, p);
        for (k = 0; k < 5; k++) {
            w = widths[k];
            if (p > 1 && w != pattern_width[p])
                continue;
            for (cols = (32 + w - 1) / w; cols * w <= MAXN; cols += 1 + cols / 5)
                for (end = 0; end < 2; end++)
                    for (edge = -ROWS - 1; edge <= cols + 1;
                         edge += 1 + (edge > 3) * (cols / 6))
                        for (off = 0; off < 64; off += 13) {
                            a = end ? edge : -ROWS - 1;
                            b = end ? cols + 1 : edge;
                            n = cols * w;
                            row = n + GAP;
                            memset(got, 0x5A, sizeof got);
                            memset(want, 0x5A, sizeof want);
                            expect_band(want + off, src, row, 0, ROWS, a, b, cols, w,
                                        pat);
                            trilu_edge_rows_avx2(got + off, src, row, row, 0, ROWS, a,
                                                 b, cols, w, p == 0 ? NULL : pat);
                            CHECK(memcmp(got, want, sizeof got) == 0,
                                  "edge rows cols=%d w=%d a=%d b=%d off=%d pattern %d",
                                  (int)cols, (int)w, (int)a, (int)b, (int)off, p);
                            cases++;
                        }
        }
    }
    printf("edge rows: %d cases, AVX2 used\n", (int)cases);
}

/* The AVX2 4x4 transposition against element-by-element copies: runs read
 * forwards and backwards, every [lo, hi) within them, a tile line of every
 * width in 8-byte elements that holds the four, and the bytes around each
 * block, which must stay untouched. */
static void check_transpose(void)
{
    enum { RUN = 24, LINE = 7 };
    static unsigned long long src[4][RUN + 8];
    static unsigned long long got[RUN * LINE + 8], want[RUN * LINE + 8];
    const char *s[4];
    ptrdiff_t step, lo, hi, line, i, end, stop;
    size_t cases = 0;
    int k;
    if (!trilu_avx2_usable()) {
        printf("transpose: AVX2 not used\n");
        return;
    }
    for (k = 0; k < 4; k++)
        for (i = 0; i < RUN + 8; i++)
            src[k][i] = (unsigned long long)rnd(1UL << 31) << 32 | (unsigned long)rnd(1UL << 31);
    for (step = -8; step <= 8; step += 16)
        for (line = 4; line <= LINE; line++)
            for (lo = 0; lo <= RUN; lo++)
                for (hi = lo; hi <= RUN; hi++) {
                    for (k = 0; k < 4; k++)  /* element i at s[k] + i * step */
                        s[k] = (const char *)(step > 0 ? &src[k][4]
                                              : &src[k][4 + RUN - 1]);
                    memset(got, 0x5A, sizeof got);
                    memset(want, 0x5A, sizeof want);
                    end = trilu_transpose4_avx2((char *)(got + 1), line * 8, s, step,
                                                lo, hi);
                    stop = lo + (hi - lo) / 4 * 4;
                    for (i = lo; i < stop; i++)
                        for (k = 0; k < 4; k++)
                            memcpy(want + 1 + i * line + k, s[k] + i * step, 8);
                    CHECK(end == stop && memcmp(got, want, sizeof got) == 0,
                          "transpose4_avx2 step=%d line=%d lo=%d hi=%d end=%d",
                          (int)step, (int)line, (int)lo, (int)hi, (int)end);
                    cases++;
                }
    printf("transpose: %d cases, AVX2 used\n", (int)cases);
}

/* The AVX2 8x8 transposition of 4-byte elements against element-by-element
 * copies: every [lo, hi) within the runs, a line of every width in 4-byte
 * elements that holds the eight, and the bytes around each block, which
 * must stay untouched. */
static void check_transpose8(void)
{
    enum { RUN = 40, LINE = 11 };
    static unsigned int src[8][RUN];
    static unsigned int got[RUN * LINE + 8], want[RUN * LINE + 8];
    const char *s[8];
    ptrdiff_t lo, hi, line, i, end, stop;
    size_t cases = 0;
    int k;
    if (!trilu_avx2_usable()) {
        printf("transpose8: AVX2 not used\n");
        return;
    }
    for (k = 0; k < 8; k++) {
        for (i = 0; i < RUN; i++)
            src[k][i] = (unsigned int)rnd(1UL << 31) << 1 | (unsigned int)rnd(2);
        s[k] = (const char *)src[k];  /* element i at s[k] + 4 * i */
    }
    for (line = 8; line <= LINE; line++)
        for (lo = 0; lo <= RUN; lo++)
            for (hi = lo; hi <= RUN; hi++) {
                memset(got, 0x5A, sizeof got);
                memset(want, 0x5A, sizeof want);
                end = trilu_transpose8_avx2((char *)(got + 1), line * 4, s, lo, hi);
                stop = lo + (hi - lo) / 8 * 8;
                for (i = lo; i < stop; i++)
                    for (k = 0; k < 8; k++)
                        memcpy(want + 1 + i * line + k, s[k] + i * 4, 4);
                CHECK(end == stop && memcmp(got, want, sizeof got) == 0,
                      "transpose8_avx2 line=%d lo=%d hi=%d end=%d", (int)line,
                      (int)lo, (int)hi, (int)end);
                cases++;
            }
    printf("transpose8: %d cases, AVX2 used\n", (int)cases);
}

/* trilu_transpose_words_avx2 (runs of 2-byte elements, 8 at a time) and
 * trilu_transpose_bytes_avx2 (1-byte, 16): every [lo, hi) and line width,
 * the bytes around the blocks untouched. */
static void check_transpose_narrow(void)
{
    enum { RUN = 40, LINE = 37 };
    static unsigned char src[16][2 * RUN];
    static unsigned char got[2 * RUN * LINE + 64], want[2 * RUN * LINE + 64];
    const char *s[16];
    ptrdiff_t lo, hi, line, i, end, stop;
    size_t cases = 0;
    int k, w, runs;
    if (!trilu_avx2_usable()) {
        printf("transpose_narrow: AVX2 not used\n");
        return;
    }
    for (k = 0; k < 16; k++) {
        for (i = 0; i < 2 * RUN; i++)
            src[k][i] = (unsigned char)rnd(256);
        s[k] = (const char *)src[k];  /* element i at s[k] + w * i */
    }
    for (w = 1; w <= 2; w++) {
        runs = 16 / w;
        for (line = runs * w; line <= LINE; line += 3)
            for (lo = 0; lo <= RUN; lo++)
                for (hi = lo; hi <= RUN; hi++) {
                    memset(got, 0x5A, sizeof got);
                    memset(want, 0x5A, sizeof want);
                    end = w == 1
                        ? trilu_transpose_bytes_avx2((char *)got + 8, line, s, lo, hi)
                        : trilu_transpose_words_avx2((char *)got + 8, line, s, lo, hi);
                    stop = lo + (hi - lo) / runs * runs;
                    for (i = lo; i < stop; i++)
                        for (k = 0; k < runs; k++)
                            memcpy(want + 8 + i * line + k * w, s[k] + i * w,
                                   (size_t)w);
                    CHECK(end == stop && memcmp(got, want, sizeof got) == 0,
                          "transpose w=%d line=%d lo=%d hi=%d end=%d", w,
                          (int)line, (int)lo, (int)hi, (int)end);
                    cases++;
                }
    }
    printf("transpose_narrow: %d cases, AVX2 used\n", (int)cases);
}

/* The tiles of 8-byte elements (trilu_tile8_avx2, trilu_tile8_avx512) and
 * of 4-, 2- and 1-byte ones (trilu_tile4_avx512, trilu_tile2_avx512,
 * trilu_tile1_avx512), streamed or not, with a fill or (AVX-512's) none
 * (nothing outside the band written), against element by
 * element copies: tiles of 1 and 2 blocks' rows and of 1 and 3 blocks'
 * columns at four places, every band (a, b) from empty to all, a fill
 * outside it; dst's rows (line-aligned at the tile) untouched around the
 * tile. */
static void check_tiles(void)
{
    typedef void tile_fn(char *const *, const char *const *, ptrdiff_t, ptrdiff_t,
                         ptrdiff_t, ptrdiff_t, ptrdiff_t, ptrdiff_t, const char *, int);
    static unsigned char src[48][512], raw[12 * 16 * 16 * 4 + 64], want[12 * 16 * 16 * 4];
    const unsigned long long fill = 0xFFF8000000000123ULL;  /* (its first w bytes) */
    unsigned char *got = raw + (64 - (uintptr_t)raw % 64) % 64;
    const char *s[48];
    char *d[32];
    tile_fn *fns[5] = {trilu_tile8_avx2, trilu_tile8_avx512, trilu_tile4_avx512,
                       trilu_tile2_avx512, trilu_tile1_avx512};
    static const ptrdiff_t widths[5] = {8, 8, 4, 2, 1};
    static const ptrdiff_t at[4][2] = {{0, 0}, {1, 2}, {5, 1}, {2, 3}};  /* blocks */
    ptrdiff_t a, b, i, j, i0, j0, rows, cols, n, w, row;
    size_t cases = 0;
    int p, k, v, f;
    for (k = 0; k < 48; k++) {
        for (i = 0; i < 512; i++)
            src[k][i] = (unsigned char)rnd(256);
        s[k] = (const char *)src[k];  /* element i at s[k] + w * i */
    }
    for (f = 0; f < 5; f++) {
        if (f == 0 ? !trilu_avx2_usable() : !trilu_avx512_usable())
            continue;
        w = widths[f];
        n = w == 8 ? 8 : 16;          /* a block's rows and columns */
        row = 6 * n * w;              /* dst's rows: whole lines */
        for (i = 0; i < 2 * n; i++)
            d[i] = (char *)got + i * row;
        for (p = 0; p < 4; p++)
            for (rows = n; rows <= 2 * n; rows += n)
                for (cols = n; cols <= 3 * n; cols += 2 * n)
                    for (a = -5 * n; a <= 5 * n; a += 3)
                        for (b = a - 1; b <= 7 * n; b += 5)
                            /* streamed or not; filled or not (AVX-512's) */
                            for (v = 0; v < (f ? 4 : 2); v++) {
                                i0 = n * at[p][0];
                                j0 = n * at[p][1];
                                memset(got, 0x5A, (size_t)(2 * n * row));
                                memset(want, 0x5A, (size_t)(2 * n * row));
                                for (i = 0; i < rows; i++)
                                    for (j = j0; j < j0 + cols; j++)
                                        if (a <= j - (i0 + i) && j - (i0 + i) <= b)
                                            memcpy(want + i * row + j * w,
                                                   s[j - j0] + (i0 + i) * w, (size_t)w);
                                        else if (v < 2)
                                            memcpy(want + i * row + j * w, &fill, (size_t)w);
                                fns[f](d, s, i0, i0 + rows, j0, j0 + cols, a, b,
                                       v < 2 ? (const char *)&fill : NULL, v & 1);
                                trilu_stream_fence();
                                CHECK(memcmp(got, want, (size_t)(2 * n * row)) == 0,
                                      "tile %d stream=%d fill=%d i0=%d j0=%d rows=%d "
                                      "cols=%d a=%d b=%d", f, v & 1, v < 2, (int)i0,
                                      (int)j0, (int)rows, (int)cols, (int)a, (int)b);
                                cases++;
                            }
    }
    printf("tiles: %d cases, AVX2 %s, AVX-512 %s\n", (int)cases,
           trilu_avx2_usable() ? "used" : "not used",
           trilu_avx512_usable() ? "used" : "not used");
}

/* A quiet NaN (math.h's NAN would pull in the C runtime's math, which the
 * MSVC-mode build links without). */
static double quiet_nan(void)
{
    const uint64_t bits = 0x7FF8000000000000ULL;
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* The number v as a w-byte float or unsigned integer, to p. */
static void put_number(unsigned char *p, double v, ptrdiff_t w, int floats)
{
    double x8 = v;
    float x4 = (float)v;
    uint64_t u8 = (uint64_t)v;
    uint32_t u4 = (uint32_t)v;
    memcpy(p, floats ? (w == 8 ? (void *)&x8 : (void *)&x4)
                     : (w == 8 ? (void *)&u8 : (void *)&u4), (size_t)w);
}

/* squareform's checked PACK (trilu_check_pack_avx512), of 8- and 4-byte
 * floats and integers, against element by element copies and comparisons:
 * n x n matrices (rows padded) of n up to 40, rows [i0, i1) at four splits,
 * symmetric with a zero diagonal (no difference found), one pair made
 * unequal, one diagonal element nonzero or NaN (found where its row is
 * among the rows); those rows' packed lines written, the bytes around
 * them untouched. */
static void check_check_pack(void)
{
    static unsigned char mat[40 * 43 * 8], got[40 * 40 * 8 + 128],
        want[40 * 40 * 8 + 128];
    ptrdiff_t n, w, row, i, j, i0, i1, p, q, at, off, found, nonzero;
    size_t cases = 0;
    int f, floats, bad, split, want_found, want_nonzero;
    if (!trilu_avx512_usable()) {
        printf("check_pack: AVX-512 not used\n");
        return;
    }
    for (f = 0; f < 4; f++)
        for (n = 1; n <= 40; n++)
            for (split = 0; split < 4; split++)
                for (bad = 0; bad < 4; bad++) {
                    w = f & 1 ? 4 : 8;
                    floats = f >> 1;
                    row = (n + 3) * w;
                    i0 = split == 1 ? n / 3 : (split == 3 ? n - 1 : 0);
                    i1 = split == 2 ? n - n / 4 : n;
                    for (i = 0; i < n; i++)  /* small whole numbers */
                        for (j = i; j < n; j++) {
                            put_number(mat + i * row + j * w,
                                       i == j ? 0.0 : (double)rnd(1000), w, floats);
                            memcpy(mat + j * row + i * w, mat + i * row + j * w,
                                   (size_t)w);
                        }
                    p = (ptrdiff_t)rnd((unsigned long)n);
                    q = (ptrdiff_t)rnd((unsigned long)n);
                    want_found = want_nonzero = 0;
                    if (bad == 1 && p != q) {  /* one of a pair changed */
                        mat[p * row + q * w] ^= 0x10;
                        want_found = min((int)p, (int)q) >= i0 && min((int)p, (int)q) < i1;
                    } else if (bad >= 2) {     /* a diagonal element: 1, or NaN */
                        put_number(mat + p * (row + w), bad == 3 && floats ? quiet_nan() : 1.0,
                                   w, floats);
                        want_found = bad == 3 && floats && p >= i0 && p < i1;
                        want_nonzero = !want_found && p >= i0 && p < i1;
                    }
                    memset(got, 0x5A, sizeof got);
                    memset(want, 0x5A, sizeof want);
                    at = off = 64;         /* the packed lines, guarded */
                    for (i = 0; i < n; i++)
                        for (j = i + 1; j < n; j++, at += w) {
                            if (i >= i0 && i < i1)
                                memcpy(want + at, mat + i * row + j * w, (size_t)w);
                            if (i < i0)
                                off += w;  /* (row i0's line) */
                        }
                    nonzero = 0;
                    found = trilu_check_pack_avx512(w, floats,
                                                    (char *)got + off - (i0 + 1) * w,
                                                    (const char *)mat, row, n, i0, i1,
                                                    &nonzero);
                    CHECK(memcmp(got, want, sizeof got) == 0
                              && (found != 0) == want_found && nonzero == want_nonzero,
                          "check_pack w=%d floats=%d n=%d rows [%d, %d) bad=%d "
                          "at (%d, %d): found %d, nonzero %d", (int)w, floats, (int)n,
                          (int)i0, (int)i1, bad, (int)p, (int)q, (int)found,
                          (int)nonzero);
                    cases++;
                }
    printf("check_pack: %d cases, AVX-512 used\n", (int)cases);
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 100000;
#if defined(_MSC_VER)
    printf("compiler: MSVC mode, _MSC_VER %d\n", (int)_MSC_VER);
#elif defined(__MINGW64__)
    printf("compiler: mingw-w64\n");
#else
    printf("compiler: native\n");
#endif
    trilu_pool_init();
    check_layout();
    check_thread_count();
    check_thread_cap();
    check_mask_slots();
    check_stream();
    check_rows();
    check_edge_rows();
    check_transpose();
    check_transpose8();
    check_transpose_narrow();
    check_tiles();
    check_check_pack();
    check_back_to_back(calls);
    check_after_idle();
    check_concurrent(calls / 10);
    check_back_to_back(calls / 10);
    printf("%s\n", failures ? "FAILED" : "ok");
    fflush(stdout);
    return failures != 0;
}
