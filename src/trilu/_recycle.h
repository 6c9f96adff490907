/* trilu's numpy memory handlers. Which results come to each, and why, is the
 * rule of docs/user_guide/memory.rst, written there once.
 *
 * Every block they give is 64-byte aligned (trilu_aligned below): XLA's CPU
 * client takes a buffer in place only so aligned, and copies any other,
 * where malloc aligns to 16. Large blocks start a page, away from where
 * numpy's own start within theirs (TRILU_PAGE_ALIGN_MIN).
 *
 * The recycling handler (Linux): its free keeps the last two blocks freed
 * (two: results made in pairs, as triu_indices' rows and columns) for the
 * next results of the same sizes, so that their pages need not be faulted
 * and zeroed by the OS again. A block of TRILU_LAZYFREE_MIN or more is first
 * given to madvise(MADV_FREE), so that the OS may take its pages back when
 * it needs memory; a smaller one is held as glibc holds freed heap below its
 * trim threshold. Everything else goes to malloc, with numpy's advice to use
 * huge pages.
 */
#ifndef TRILU_RECYCLE_H
#define TRILU_RECYCLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#include "_threads.h"          /* trilu_pause */

#if defined(__linux__) && defined(MADV_FREE) && defined(MADV_HUGEPAGE) \
    && defined(MREMAP_MAYMOVE)
#define TRILU_RECYCLE 1
#else
#define TRILU_RECYCLE 0
#endif

/* Aligned blocks, on every platform: 64 bytes (TRILU_ALIGN), and a page
 * (TRILU_PAGE) from TRILU_PAGE_ALIGN_MIN on. Malloc's block is longer by the
 * alignment and a size_t, the block shifted up to the next aligned address
 * with room for the size_t before it, which holds the shift; free and
 * realloc undo it. */
#define TRILU_ALIGN 64         /* XLA's CPU client takes only such buffers */
#define TRILU_PAGE 4096
/* glibc's default mmap threshold: numpy's arrays this big start 16 bytes into
 * a page (mmap's chunk header), and a result 64-byte aligned would start 48
 * bytes after its source within a page. A copy whose destination runs a
 * little ahead of its source modulo 4 KiB stalls each load on the store
 * before it (4K aliasing); a result at a page's start runs 16 bytes behind. */
#define TRILU_PAGE_ALIGN_MIN ((size_t)128 << 10)

static size_t trilu_alignment(size_t size)
{
    return size >= TRILU_PAGE_ALIGN_MIN ? TRILU_PAGE : TRILU_ALIGN;
}

/* The shift from malloc's block at p to an aligned block of size bytes. */
static size_t trilu_shift_for(const char *p, size_t size)
{
    size_t a = trilu_alignment(size);
    return a - ((uintptr_t)p + sizeof(size_t) - 1) % a + sizeof(size_t) - 1;
}

static void *trilu_align(char *p, size_t size)
{
    size_t shift;
    if (p == NULL)
        return NULL;
    shift = trilu_shift_for(p, size);
    memcpy(p + shift - sizeof(size_t), &shift, sizeof(size_t));
    return p + shift;
}

/* The shift of the block at ptr, kept in the size_t before it. */
static size_t trilu_shift(const void *ptr)
{
    size_t shift;
    memcpy(&shift, (const char *)ptr - sizeof(size_t), sizeof(size_t));
    return shift;
}

/* malloc's bytes for a block of size bytes, or 0 where they overflow. */
static size_t trilu_padded(size_t size)
{
    size_t pad = trilu_alignment(size) + sizeof(size_t);
    return size > SIZE_MAX - pad ? 0 : size + pad;
}

static void *trilu_aligned_malloc(size_t size)
{
    size_t n = trilu_padded(size);
    return n ? trilu_align((char *)malloc(n), size) : NULL;
}

static void *trilu_aligned_calloc(size_t nelem, size_t elsize)
{
    size_t n;
    if (elsize != 0 && nelem > SIZE_MAX / elsize)
        return NULL;
    n = trilu_padded(nelem * elsize);
    return n ? trilu_align((char *)calloc(1, n), nelem * elsize) : NULL;
}

static void *trilu_aligned_realloc(void *ptr, size_t size)
{
    char *p;
    size_t shift, moved, n;
    if (ptr == NULL)
        return trilu_aligned_malloc(size);
    shift = trilu_shift(ptr);
    n = trilu_padded(size);
    if (n == 0 || size > SIZE_MAX - shift)
        return NULL;
    /* room for the bytes at the old shift too, until they are moved */
    p = (char *)realloc((char *)ptr - shift, n > size + shift ? n : size + shift);
    if (p == NULL)
        return NULL;
    moved = trilu_shift_for(p, size);
    if (moved != shift)        /* realloc kept the bytes, not their alignment */
        memmove(p + moved, p + shift, size);
    memcpy(p + moved - sizeof(size_t), &moved, sizeof(size_t));
    return p + moved;
}

static void trilu_aligned_free(void *ptr)
{
    if (ptr != NULL)
        free((char *)ptr - trilu_shift(ptr));
}

static void *trilu_aligned_malloc_ctx(void *ctx, size_t size)
{
    (void)ctx;
    return trilu_aligned_malloc(size);
}

static void *trilu_aligned_calloc_ctx(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    return trilu_aligned_calloc(nelem, elsize);
}

static void *trilu_aligned_realloc_ctx(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    return trilu_aligned_realloc(ptr, size);
}

static void trilu_aligned_free_ctx(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    trilu_aligned_free(ptr);
}

/* The handler of results handed to a library that takes only aligned memory
 * in place (while its call runs), where trilu's others do not serve them. */
static PyDataMem_Handler trilu_aligned = {
    "trilu_aligned",
    1,
    {NULL, trilu_aligned_malloc_ctx, trilu_aligned_calloc_ctx,
     trilu_aligned_realloc_ctx, trilu_aligned_free_ctx},
};

static PyObject *trilu_aligned_capsule(void)
{
    return PyCapsule_New(&trilu_aligned, "mem_handler", NULL);
}

#define TRILU_RECYCLE_MIN ((size_t)4 << 20)    /* smaller: malloc's heap reuses it warm */
#define TRILU_RECYCLE_MAX ((size_t)256 << 20)  /* bounds the memory held idle */
#define TRILU_CALLOC_MIN ((size_t)32 << 20)    /* glibc's largest mmap threshold */
#define TRILU_LAZYFREE_MIN ((size_t)64 << 20)  /* and its largest trim threshold */
#define TRILU_HUGEPAGE_MIN ((size_t)4 << 20)   /* numpy's, for madvise */
#define TRILU_HUGEPAGE ((size_t)2 << 20)       /* x86-64's and arm64's (4 KiB pages) */

#if TRILU_RECYCLE

/* Spare blocks kept: two, for results made in pairs (triu_indices' rows and
 * columns), which are freed together. */
#define TRILU_SPARES 2

static struct {
    char lock;                 /* a spin lock, held for a few instructions */
    void *block[TRILU_SPARES]; /* the spare blocks, or NULL */
    size_t size[TRILU_SPARES];
    int next;                  /* the slot the next freed block takes */
    int hugepages;             /* numpy's madvise_hugepage setting */
    size_t page;               /* the OS's page size */
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
    uintptr_t offset = trilu_spare.page - (uintptr_t)p % trilu_spare.page;
    if (trilu_spare.hugepages && size >= TRILU_HUGEPAGE_MIN)
        madvise((char *)p + offset, size - offset, MADV_HUGEPAGE);
}

/* The spare block has this size (the spin lock held). */
static int trilu_spare_is(size_t size)
{
    int t;
    for (t = 0; t < TRILU_SPARES; t++)
        if (trilu_spare.block[t] != NULL && trilu_spare.size[t] == size)
            return t;
    return -1;
}

/* Whether the spare block has this size (the next malloc of it may take it,
 * unless another thread takes it first). */
static int trilu_spare_fits(size_t size)
{
    int fits;
    trilu_spare_lock();
    fits = trilu_spare_is(size) >= 0;
    trilu_spare_unlock();
    return fits;
}

static void *trilu_malloc(void *ctx, size_t size)
{
    void *p = NULL;
    int t;
    (void)ctx;
    trilu_spare_lock();
    if ((t = trilu_spare_is(size)) >= 0) {
        p = trilu_spare.block[t];
        trilu_spare.block[t] = NULL;
    }
    trilu_spare_unlock();
    if (p != NULL)
        return p;
    p = trilu_aligned_malloc(size);
    if (p != NULL)
        trilu_advise_hugepages(p, size);
    return p;
}

static void *trilu_calloc(void *ctx, size_t nelem, size_t elsize)
{
    void *p = trilu_aligned_calloc(nelem, elsize);
    (void)ctx;
    if (p != NULL)
        trilu_advise_hugepages(p, nelem * elsize);
    return p;
}

static void *trilu_realloc(void *ctx, void *ptr, size_t size)
{
    void *p = trilu_aligned_realloc(ptr, size);
    (void)ctx;
    if (p != NULL)
        trilu_advise_hugepages(p, size);
    return p;
}

static void trilu_free(void *ctx, void *ptr, size_t size)
{
    uintptr_t page = trilu_spare.page;
    uintptr_t start = ((uintptr_t)ptr + page - 1) / page * page;
    uintptr_t stop = ((uintptr_t)ptr + size) / page * page;
    void *old;
    int t;
    (void)ctx;
    if (ptr == NULL || size < TRILU_RECYCLE_MIN || size > TRILU_RECYCLE_MAX
            || (size >= TRILU_LAZYFREE_MIN
                && madvise((void *)start, stop - start, MADV_FREE) != 0)) {
        trilu_aligned_free(ptr);
        return;
    }
    trilu_spare_lock();
    t = trilu_spare.block[0] == NULL ? 0 : trilu_spare.block[1] == NULL ? 1
        : trilu_spare.next;
    old = trilu_spare.block[t];
    trilu_spare.block[t] = ptr;
    trilu_spare.size[t] = size;
    trilu_spare.next = 1 - t;
    trilu_spare_unlock();
    trilu_aligned_free(old);
}

static PyDataMem_Handler trilu_recycler = {
    "trilu_recycle",
    1,
    {NULL, trilu_malloc, trilu_calloc, trilu_realloc, trilu_free},
};

/* Zero pages: a second handler, for results that are mostly zero. Each block
 * is a mapping of its own, so its pages are fresh zero pages that only the
 * kept part (and the header, on the first page) touches, given back to the
 * OS when the result is freed. (glibc's calloc maps fresh pages only above
 * its mmap threshold, which rises to 32 MiB as large blocks are freed; below
 * it, calloc memsets heap memory.) The pages are small even where transparent
 * huge pages are always on: a huge page would be zeroed whole at the first
 * kept byte written. The mapping's size is kept in a header before the block;
 * 0 there marks a block from trilu_aligned_calloc, where mmap failed (a
 * process may hold only so many mappings: vm.max_map_count). */
#define TRILU_MAP_HEADER 64    /* keeps the block 64-byte aligned */

static void *trilu_map(size_t size)
{
    size_t mapped = size + TRILU_MAP_HEADER;
    char *p;
    if (mapped < size)
        return NULL;
    p = (char *)mmap(NULL, mapped, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        p = (char *)trilu_aligned_calloc(1, mapped);
        mapped = 0;
        if (p == NULL)
            return NULL;
    } else if (mapped >= TRILU_HUGEPAGE) {
        madvise(p, mapped, MADV_NOHUGEPAGE);
    }
    memcpy(p, &mapped, sizeof mapped);
    return p + TRILU_MAP_HEADER;
}

static size_t trilu_mapped(const char *p)
{
    size_t mapped;
    memcpy(&mapped, p, sizeof mapped);
    return mapped;
}

static void *trilu_map_malloc(void *ctx, size_t size)
{
    (void)ctx;
    return trilu_map(size);
}

static void *trilu_map_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    if (elsize != 0 && nelem > SIZE_MAX / elsize)
        return NULL;
    return trilu_map(nelem * elsize);
}

static void *trilu_map_realloc(void *ctx, void *ptr, size_t size)
{
    char *p, *q;
    size_t mapped = size + TRILU_MAP_HEADER;
    (void)ctx;
    if (ptr == NULL)
        return trilu_map(size);
    if (mapped < size)
        return NULL;
    p = (char *)ptr - TRILU_MAP_HEADER;
    if (trilu_mapped(p) == 0) {        /* from calloc: the header stays 0 */
        q = (char *)trilu_aligned_realloc(p, mapped);
        return q != NULL ? q + TRILU_MAP_HEADER : NULL;
    }
    q = (char *)mremap(p, trilu_mapped(p), mapped, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        return NULL;
    memcpy(q, &mapped, sizeof mapped);
    return q + TRILU_MAP_HEADER;
}

static void trilu_map_free(void *ctx, void *ptr, size_t size)
{
    char *p = (char *)ptr - TRILU_MAP_HEADER;
    (void)ctx;
    (void)size;
    if (ptr == NULL)
        return;
    if (trilu_mapped(p) == 0)
        trilu_aligned_free(p);
    else
        munmap(p, trilu_mapped(p));
}

static PyDataMem_Handler trilu_zero_pages = {
    "trilu_zero_pages",
    1,
    {NULL, trilu_map_malloc, trilu_map_calloc, trilu_map_realloc,
     trilu_map_free},
};

/* The handler as numpy wants it (a "mem_handler" capsule), or None where
 * recycling is not built. */
static PyObject *trilu_recycler_capsule(int hugepages)
{
    static int registered = 0;
    trilu_spare.page = (size_t)sysconf(_SC_PAGESIZE);
    trilu_spare.hugepages = hugepages;
    if (!registered) {
        pthread_atfork(NULL, NULL, trilu_spare_after_fork);
        registered = 1;
    }
    return PyCapsule_New(&trilu_recycler, "mem_handler", NULL);
}

/* The zero-pages handler as numpy wants it, or None where it is not built. */
static PyObject *trilu_zero_pages_capsule(void)
{
    return PyCapsule_New(&trilu_zero_pages, "mem_handler", NULL);
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

static PyObject *trilu_zero_pages_capsule(void)
{
    Py_RETURN_NONE;
}

#endif /* TRILU_RECYCLE */

#endif /* TRILU_RECYCLE_H */
