/* The masks of a thread's last call, kept for its next: a loop over matrices
 * of one shape and band builds them once. A job's masks depend on the key
 * the kernel writes beside them (its shape, band, element width and fill);
 * they are read by the pool's threads only while the calling thread waits
 * for them, so one slot a thread needs no lock. TRILU_MASK_BYTES bounds the
 * masks of any job that has some: BAND_MASK's crossed rows, MATRICES' block.
 * (The vector loops that AND them are _simd.h's.) */
#ifndef TRILU_MASK_H
#define TRILU_MASK_H

#include <stddef.h>

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
