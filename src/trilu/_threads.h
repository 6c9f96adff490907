/* A portable fork-safe "run these tasks in parallel" for the kernel.
 *
 * Threads are created per call and joined before returning: no pool, so no
 * state survives a fork() and nothing spins between calls. Creating and
 * joining a thread costs ~35 us, which the kernel only pays for 4 MiB or more
 * of work per thread. The
 * threads claim small grains of work with an atomic counter, so a thread
 * whose core is busy with something else simply claims fewer.
 * pthreads on POSIX, _beginthreadex on Windows; no OpenMP runtime needed.
 */
#ifndef TRILU_THREADS_H
#define TRILU_THREADS_H

#ifdef _WIN32
#include <windows.h>
#include <process.h>
#else
#include <pthread.h>
#endif

#define TRILU_MAX_THREADS 64

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

typedef struct {
    trilu_task_fn fn;
    void *arg;
} trilu_task;

#ifdef _WIN32
static unsigned __stdcall trilu_thread_main(void *p)
{
    trilu_task *t = (trilu_task *)p;
    t->fn(t->arg);
    return 0;
}
#else
static void *trilu_thread_main(void *p)
{
    trilu_task *t = (trilu_task *)p;
    t->fn(t->arg);
    return NULL;
}
#endif

/* Run fn(args[i]) for i in [0, n): tasks 1..n-1 on new threads, task 0 on the
 * caller. A task whose thread cannot be created runs on the caller instead. */
static void trilu_parallel(trilu_task_fn fn, void **args, int n)
{
    trilu_task tasks[TRILU_MAX_THREADS];
    int started[TRILU_MAX_THREADS];
#ifdef _WIN32
    HANDLE handles[TRILU_MAX_THREADS];
#else
    pthread_t handles[TRILU_MAX_THREADS];
#endif
    int i;

    if (n > TRILU_MAX_THREADS)
        n = TRILU_MAX_THREADS;
    for (i = 1; i < n; i++) {
        tasks[i].fn = fn;
        tasks[i].arg = args[i];
#ifdef _WIN32
        handles[i] = (HANDLE)_beginthreadex(NULL, 0, trilu_thread_main,
                                            &tasks[i], 0, NULL);
        started[i] = handles[i] != 0;
#else
        started[i] = pthread_create(&handles[i], NULL, trilu_thread_main,
                                    &tasks[i]) == 0;
#endif
        if (!started[i])
            fn(args[i]);
    }
    if (n > 0)
        fn(args[0]);
    for (i = 1; i < n; i++) {
        if (!started[i])
            continue;
#ifdef _WIN32
        WaitForSingleObject(handles[i], INFINITE);
        CloseHandle(handles[i]);
#else
        pthread_join(handles[i], NULL);
#endif
    }
}

#endif /* TRILU_THREADS_H */
