/* A numpy memory handler that recycles the memory of large results (Linux).
 *
 * A fresh result of 32 MiB or more is mapped anew by malloc each time, and the
 * kernel zeroes every page as it is first touched: that was 56% of the time
 * of a fresh 2048x2048 float64 triu, twice the copying itself. Smaller blocks
 * come from malloc's heap, and come back without faults only while nothing
 * else has taken the freed space. trilu allocates results of 4 MiB or more
 * through this handler, whose free keeps the last block freed (one block, at
 * most 256 MiB) for the next result of the same size. A block of 64 MiB or
 * more is first given to madvise(MADV_FREE): the kernel takes its pages back
 * whenever it needs memory, and until it does, reusing them costs no fault.
 * A smaller block is simply held, as glibc holds up to 64 MiB of freed heap
 * before it trims: madvise takes 0.1-0.2 ms on 32 MiB, a tenth of the time of
 * a fresh triangle that size. Everything else goes to malloc, with numpy's
 * advice to use huge pages.
 */
#ifndef TRILU_RECYCLE_H
#define TRILU_RECYCLE_H

#include <stdint.h>
#include <stdlib.h>
#ifdef __linux__
#include <pthread.h>
#include <sys/mman.h>
#endif
#include "_threads.h"          /* trilu_pause */

#if defined(__linux__) && defined(MADV_FREE) && defined(MADV_HUGEPAGE)
#define TRILU_RECYCLE 1
#else
#define TRILU_RECYCLE 0
#endif

#define TRILU_RECYCLE_MIN ((size_t)4 << 20)
#define TRILU_RECYCLE_MAX ((size_t)256 << 20)
#define TRILU_CALLOC_MIN ((size_t)32 << 20)    /* glibc's largest mmap threshold */
#define TRILU_LAZYFREE_MIN ((size_t)64 << 20)  /* and its largest trim threshold */
#define TRILU_HUGEPAGE_MIN ((size_t)4 << 20)   /* numpy's, for madvise */

#if TRILU_RECYCLE

static struct {
    char lock;                 /* a spin lock, held for a few instructions */
    void *block;               /* the spare block, or NULL */
    size_t size;
    int hugepages;             /* numpy's madvise_hugepage setting */
} trilu_spare;

static void trilu_spare_lock(void)
{
    while (__atomic_test_and_set(&trilu_spare.lock, __ATOMIC_ACQUIRE))
        trilu_pause();     /* yield the core's pipeline to its sibling thread */
}

static void trilu_spare_unlock(void)
{
    __atomic_clear(&trilu_spare.lock, __ATOMIC_RELEASE);
}

/* A forked child may have copied the lock held by another thread. */
static void trilu_spare_after_fork(void)
{
    __atomic_clear(&trilu_spare.lock, __ATOMIC_RELAXED);
}

/* What numpy's own allocator does for large blocks. */
static void trilu_advise_hugepages(void *p, size_t size)
{
    uintptr_t offset = 4096 - (uintptr_t)p % 4096;
    if (trilu_spare.hugepages && size >= TRILU_HUGEPAGE_MIN)
        madvise((char *)p + offset, size - offset, MADV_HUGEPAGE);
}

/* The spare block has this size (the spin lock held). */
static int trilu_spare_is(size_t size)
{
    return trilu_spare.block != NULL && trilu_spare.size == size;
}

/* Whether the spare block has this size (the next malloc of it may take it,
 * unless another thread takes it first). */
static int trilu_spare_fits(size_t size)
{
    int fits;
    trilu_spare_lock();
    fits = trilu_spare_is(size);
    trilu_spare_unlock();
    return fits;
}

static void *trilu_malloc(void *ctx, size_t size)
{
    void *p = NULL;
    (void)ctx;
    trilu_spare_lock();
    if (trilu_spare_is(size)) {
        p = trilu_spare.block;
        trilu_spare.block = NULL;
    }
    trilu_spare_unlock();
    if (p != NULL)
        return p;
    p = malloc(size);
    if (p != NULL)
        trilu_advise_hugepages(p, size);
    return p;
}

static void *trilu_calloc(void *ctx, size_t nelem, size_t elsize)
{
    void *p = calloc(nelem, elsize);
    (void)ctx;
    if (p != NULL)
        trilu_advise_hugepages(p, nelem * elsize);
    return p;
}

static void *trilu_realloc(void *ctx, void *ptr, size_t size)
{
    void *p = realloc(ptr, size);
    (void)ctx;
    if (p != NULL)
        trilu_advise_hugepages(p, size);
    return p;
}

static void trilu_free(void *ctx, void *ptr, size_t size)
{
    uintptr_t start = ((uintptr_t)ptr + 4095) & ~(uintptr_t)4095;
    uintptr_t stop = ((uintptr_t)ptr + size) & ~(uintptr_t)4095;
    void *old;
    (void)ctx;
    if (ptr == NULL || size < TRILU_RECYCLE_MIN || size > TRILU_RECYCLE_MAX
            || (size >= TRILU_LAZYFREE_MIN
                && madvise((void *)start, stop - start, MADV_FREE) != 0)) {
        free(ptr);
        return;
    }
    trilu_spare_lock();
    old = trilu_spare.block;
    trilu_spare.block = ptr;
    trilu_spare.size = size;
    trilu_spare_unlock();
    free(old);
}

static PyDataMem_Handler trilu_recycler = {
    "trilu_recycle",
    1,
    {NULL, trilu_malloc, trilu_calloc, trilu_realloc, trilu_free},
};

/* The handler as numpy wants it (a "mem_handler" capsule), or None where
 * recycling is not built. */
static PyObject *trilu_recycler_capsule(int hugepages)
{
    static int registered = 0;
    trilu_spare.hugepages = hugepages;
    if (!registered) {
        pthread_atfork(NULL, NULL, trilu_spare_after_fork);
        registered = 1;
    }
    return PyCapsule_New(&trilu_recycler, "mem_handler", NULL);
}

#else /* no recycling: large results come from numpy's allocator */

static int trilu_spare_fits(size_t size)
{
    (void)size;
    return 0;
}

static PyObject *trilu_recycler_capsule(int hugepages)
{
    (void)hugepages;
    Py_RETURN_NONE;
}

#endif /* TRILU_RECYCLE */

#endif /* TRILU_RECYCLE_H */
