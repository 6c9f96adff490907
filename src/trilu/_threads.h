/* A portable, fork-safe pool that runs a call's tasks in parallel.
 *
 * Workers are created on the first threaded call. After a task a worker polls
 * for the next one for about 10 us, then sleeps on a condition variable: a
 * sleeping worker is slow to wake once its core has halted, which
 * back-to-back calls would otherwise pay every time, and creating and joining
 * a thread per call costs more still. The
 * caller runs task 0 itself. One call uses the pool at a time; a concurrent
 * call (another Python thread, the GIL being released) runs only its task 0,
 * on its own thread, and that task steals every grain the others would have
 * claimed. The tasks claim grains of work with an atomic counter, so a task
 * whose thread is slow to start or whose core is busy simply claims fewer.
 * A forked child starts with no pool and builds its own.
 * pthreads on POSIX, Windows threads on Windows; no OpenMP runtime needed.
 */
#ifndef TRILU_THREADS_H
#define TRILU_THREADS_H

#ifdef _WIN32
/* Without these, windows.h defines min and max (and, through rpcndr.h,
 * small) as macros; near and far it defines (empty) whatever the settings. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#include <process.h>
#else
#include <pthread.h>
#include <time.h>
#endif

#define TRILU_MAX_THREADS 64  /* sizes the pool's arrays; copies are memory-bound sooner */

/* Atomically add v to *p and return the old value: threads claim work. */
static inline Py_ssize_t trilu_fetch_add(Py_ssize_t *p, Py_ssize_t v)
{
#ifdef _MSC_VER
#ifdef _WIN64
    return (Py_ssize_t)InterlockedExchangeAdd64((volatile LONG64 *)p, v);
#else
    return (Py_ssize_t)InterlockedExchangeAdd((volatile LONG *)p, v);
#endif
#else
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

typedef void (*trilu_task_fn)(void *);

/* --- a mutex and condition variables, the same on every platform ---------- */

#ifdef _WIN32
typedef SRWLOCK trilu_mutex;
typedef CONDITION_VARIABLE trilu_cond;
#define trilu_mutex_init(m) InitializeSRWLock(m)
#define trilu_mutex_lock(m) AcquireSRWLockExclusive(m)
#define trilu_mutex_trylock(m) (TryAcquireSRWLockExclusive(m) != 0)
#define trilu_mutex_unlock(m) ReleaseSRWLockExclusive(m)
#define trilu_cond_init(c) InitializeConditionVariable(c)
#define trilu_cond_wait(c, m) SleepConditionVariableSRW(c, m, INFINITE, 0)
#define trilu_cond_signal(c) WakeConditionVariable(c)
#else
typedef pthread_mutex_t trilu_mutex;
typedef pthread_cond_t trilu_cond;
#define trilu_mutex_init(m) pthread_mutex_init(m, NULL)
#define trilu_mutex_lock(m) pthread_mutex_lock(m)
#define trilu_mutex_trylock(m) (pthread_mutex_trylock(m) == 0)
#define trilu_mutex_unlock(m) pthread_mutex_unlock(m)
#define trilu_cond_init(c) pthread_cond_init(c, NULL)
#define trilu_cond_wait(c, m) pthread_cond_wait(c, m)
#define trilu_cond_signal(c) pthread_cond_signal(c)
#endif

/* --- atomics, spinning, a clock -------------------------------------------- */

#ifdef _MSC_VER
/* A plain load with acquire ordering, not a locked read-modify-write: the
 * spin loops poll with it, and a locked instruction takes the cache line
 * exclusive at every poll. On x86 and x64 every load acquires, and the
 * compiler barrier keeps later accesses below it; on ARM64 a dmb ish after
 * the load orders it (0xB: _ARM64_BARRIER_ISH). */
static inline LONG trilu_load_acquire(volatile LONG *p)
{
    LONG v = __iso_volatile_load32((volatile __int32 *)p);
#if defined(_M_ARM64) || defined(_M_ARM64EC) || defined(_M_ARM)
    __dmb(0xB);
#else
    _ReadWriteBarrier();
#endif
    return v;
}
#define trilu_load(p) trilu_load_acquire((volatile LONG *)(p))
#define trilu_store(p, v) InterlockedExchange((volatile LONG *)(p), (v))
#define trilu_decrement(p) InterlockedDecrement((volatile LONG *)(p))
#define trilu_pause() YieldProcessor()
#else
#define trilu_load(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define trilu_store(p, v) __atomic_store_n(p, (v), __ATOMIC_RELEASE)
#define trilu_decrement(p) __atomic_sub_fetch(p, 1, __ATOMIC_RELEASE)
#if defined(__x86_64__) || defined(__i386__)
#define trilu_pause() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define trilu_pause() __asm__ __volatile__("yield")
#else
#define trilu_pause() ((void)0)
#endif
#endif

/* The thread count large calls may use, read by any thread while another
 * may set it: a relaxed atomic (an aligned int moves in one access). */
static int trilu_num_threads = 1;

static inline int trilu_threads_get(void)
{
#ifdef _MSC_VER
    return (int)__iso_volatile_load32((const volatile __int32 *)&trilu_num_threads);
#else
    return __atomic_load_n(&trilu_num_threads, __ATOMIC_RELAXED);
#endif
}

static inline void trilu_threads_set(int n)
{
#ifdef _MSC_VER
    __iso_volatile_store32((volatile __int32 *)&trilu_num_threads, (__int32)n);
#else
    __atomic_store_n(&trilu_num_threads, n, __ATOMIC_RELAXED);
#endif
}

/* A cap on the count for the calling thread's own calls, 0 for none: a
 * thread-local, so capping the calls of one thread (a dask block's, which
 * runs beside other blocks) leaves every other thread's count alone. */
#ifdef _MSC_VER
static __declspec(thread) int trilu_thread_cap = 0;
#else
static __thread int trilu_thread_cap = 0;
#endif

/* Set the calling thread's cap; returns the one it replaces. */
static inline int trilu_cap_threads(int n)
{
    int old = trilu_thread_cap;
    trilu_thread_cap = n;
    return old;
}

/* The count the calling thread's calls may use: the count, under its cap. */
static inline int trilu_threads_mine(void)
{
    int n = trilu_threads_get();
    return trilu_thread_cap > 0 && trilu_thread_cap < n ? trilu_thread_cap : n;
}

/* The same count as exported C functions, the way threadpoolctl finds a
 * native pool (as openblas_get_num_threads): trilu's controller
 * (_threadpoolctl.py) takes a library named "_kernel*" only if it exports
 * these, and calls them in the library it found, so no other package's
 * _kernel is taken for trilu's. */
#ifdef _WIN32
#define TRILU_EXPORT __declspec(dllexport)
#else
#define TRILU_EXPORT __attribute__((visibility("default")))
#endif

TRILU_EXPORT int trilu_get_num_threads(void);
TRILU_EXPORT void trilu_set_num_threads(int n);

TRILU_EXPORT int trilu_get_num_threads(void)
{
    return trilu_threads_get();
}

/* Clamped to 1..TRILU_MAX_THREADS. */
TRILU_EXPORT void trilu_set_num_threads(int n)
{
    trilu_threads_set(n < 1 ? 1 : n > TRILU_MAX_THREADS ? TRILU_MAX_THREADS : n);
}

/* How long the caller, done with its own task, polls for the workers to
 * finish their last grain before it sleeps, and how long a worker polls for
 * its next task: both shorter than a sleep and a wake-up. */
#define TRILU_CALLER_SPIN_US 50
#define TRILU_WORKER_SPIN_US 10

static double trilu_seconds(void)
{
#ifdef _WIN32
    LARGE_INTEGER t, f;
    QueryPerformanceCounter(&t);
    QueryPerformanceFrequency(&f);
    return (double)t.QuadPart / (double)f.QuadPart;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
#endif
}

/* Pause instructions per microsecond: 5 to 150 cycles each, by CPU model.
 * Calibrated when the first worker starts, not at import. */
static int trilu_pauses_per_us = 0;

static void trilu_calibrate_pause(void)
{
    double start = trilu_seconds(), us;
    int i;
    for (i = 0; i < 4000; i++)
        trilu_pause();
    us = (trilu_seconds() - start) * 1e6;
    trilu_pauses_per_us = us <= 0.0 || 4000.0 / us < 1.0 ? 1 : (int)(4000.0 / us);
}

/* --- the pool ------------------------------------------------------------- */

/* Each worker on cache lines of its own: its thread polls offered while the
 * caller writes the next worker's, and two workers on one line would bounce
 * it between their cores at every poll. */
#ifdef _MSC_VER
#define TRILU_CACHE_LINE __declspec(align(64))
#else
#define TRILU_CACHE_LINE __attribute__((aligned(64)))
#endif

typedef struct TRILU_CACHE_LINE {
    trilu_cond wake;           /* signalled when this worker is offered a task */
    int offered;               /* a task is on offer (atomic, so it can be polled) */
    trilu_task_fn fn;          /* the task */
    void *arg;
} trilu_worker;

static struct {
    trilu_mutex busy;          /* held by the call using the pool */
    trilu_mutex lock;          /* guards everything below */
    trilu_cond done;           /* signalled when running drops to 0 */
    int running;               /* tasks taken by workers and not finished */
    int started;               /* workers running, index 1..started */
    int ready;                 /* the locks above are initialized */
    trilu_worker workers[TRILU_MAX_THREADS];
} trilu_pool;

#ifdef _WIN32
static unsigned __stdcall trilu_worker_main(void *p)
#else
static void *trilu_worker_main(void *p)
#endif
{
    trilu_worker *w = (trilu_worker *)p;
    trilu_task_fn fn;
    void *arg;
    int spin;

    trilu_mutex_lock(&trilu_pool.lock);
    for (;;) {
        while (!w->offered)
            trilu_cond_wait(&w->wake, &trilu_pool.lock);
        fn = w->fn;            /* take it: the caller can no longer withdraw it */
        arg = w->arg;
        trilu_store(&w->offered, 0);
        trilu_pool.running++;
        trilu_mutex_unlock(&trilu_pool.lock);
        fn(arg);
        trilu_mutex_lock(&trilu_pool.lock);
        if (trilu_decrement(&trilu_pool.running) == 0)
            trilu_cond_signal(&trilu_pool.done);
        trilu_mutex_unlock(&trilu_pool.lock);
        spin = TRILU_WORKER_SPIN_US * trilu_pauses_per_us;
        while (spin-- > 0 && !trilu_load(&w->offered))
            trilu_pause();
        trilu_mutex_lock(&trilu_pool.lock);
    }
#ifdef _WIN32
    return 0;
#else
    return NULL;
#endif
}

/* Fresh locks and no workers: at first use, and in a forked child, which has
 * none of its parent's threads (and maybe a copy of a held lock). */
static void trilu_pool_reset(void)
{
    int i;

    trilu_mutex_init(&trilu_pool.busy);
    trilu_mutex_init(&trilu_pool.lock);
    trilu_cond_init(&trilu_pool.done);
    for (i = 0; i < TRILU_MAX_THREADS; i++) {
        trilu_cond_init(&trilu_pool.workers[i].wake);
        trilu_pool.workers[i].offered = 0;
    }
    trilu_pool.running = 0;
    trilu_pool.started = 0;
    trilu_pool.ready = 1;
}

/* Called at the module's import, with the GIL held: no race on ready. */
static void trilu_pool_init(void)
{
    if (trilu_pool.ready)
        return;
    trilu_pool_reset();
#ifndef _WIN32
    pthread_atfork(NULL, NULL, trilu_pool_reset);
#endif
}

/* Start workers up to index n-1 (the caller holds busy); returns how many of
 * n tasks the pool can take, the caller's included. */
static int trilu_pool_grow(int n)
{
    if (trilu_pauses_per_us == 0 && trilu_pool.started + 1 < n)
        trilu_calibrate_pause();
    while (trilu_pool.started + 1 < n) {
        void *w = &trilu_pool.workers[trilu_pool.started + 1];
#ifdef _WIN32
        HANDLE h = (HANDLE)_beginthreadex(NULL, 0, trilu_worker_main, w, 0, NULL);
        if (h == 0)
            break;
        CloseHandle(h);        /* the worker runs on, detached */
#else
        pthread_t t;
        pthread_attr_t attr;
        int failed;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        failed = pthread_create(&t, &attr, trilu_worker_main, w);
        pthread_attr_destroy(&attr);
        if (failed)
            break;
#endif
        trilu_pool.started++;
    }
    return trilu_pool.started + 1 < n ? trilu_pool.started + 1 : n;
}

/* Run n tasks fn(args[i]) that share one job, each of which goes on to finish
 * whatever the others have not claimed (work stealing). Task 0 runs on the
 * caller and the others are offered to pool workers; once the caller's task
 * returns the whole job is claimed, so offers not yet taken are withdrawn, and
 * the caller only waits for tasks already running. A sleeping worker wakes
 * only after a system call and a context switch: small jobs lose nothing by
 * offering it work, as the caller may finish before it starts. If the pool
 * is busy with another call, or short of workers, the caller runs alone. */
static void trilu_parallel(trilu_task_fn fn, void **args, int n)
{
    int i, spin, workers = 1, pooled = 0;

    if (n < 1)
        return;
    if (n > TRILU_MAX_THREADS)
        n = TRILU_MAX_THREADS;
    if (n > 1 && trilu_mutex_trylock(&trilu_pool.busy)) {
        pooled = 1;
        workers = trilu_pool_grow(n);
        trilu_mutex_lock(&trilu_pool.lock);
        for (i = 1; i < workers; i++) {
            trilu_pool.workers[i].fn = fn;
            trilu_pool.workers[i].arg = args[i];
            trilu_store(&trilu_pool.workers[i].offered, 1);
            trilu_cond_signal(&trilu_pool.workers[i].wake);
        }
        trilu_mutex_unlock(&trilu_pool.lock);
    }
    fn(args[0]);
    if (workers == 1) {        /* alone: the pool was busy, or no worker started */
        if (pooled)
            trilu_mutex_unlock(&trilu_pool.busy);
        return;
    }
    trilu_mutex_lock(&trilu_pool.lock);
    for (i = 1; i < workers; i++)
        trilu_store(&trilu_pool.workers[i].offered, 0);
    trilu_mutex_unlock(&trilu_pool.lock);
    spin = TRILU_CALLER_SPIN_US * trilu_pauses_per_us;
    while (spin-- > 0 && trilu_load(&trilu_pool.running))
        trilu_pause();
    trilu_mutex_lock(&trilu_pool.lock);
    while (trilu_pool.running > 0)
        trilu_cond_wait(&trilu_pool.done, &trilu_pool.lock);
    trilu_mutex_unlock(&trilu_pool.lock);
    trilu_mutex_unlock(&trilu_pool.busy);
}

#endif /* TRILU_THREADS_H */
