/* h2mem.c: an HTTP/2 session's own allocator (h2mem.h). */
#include "h2mem.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define H2MEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define H2MEM_ASAN 1
#endif
#endif
#ifdef H2MEM_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Before every block: 16 bytes, so the caller's bytes keep malloc's
 * alignment. cls is HB_H2MEM_CLASSES for a block malloc'd whole. */
struct hb_h2mem_block {
    hb_h2mem_block *next; /* while kept */
    uint32_t cls;
    uint32_t unused;
};

#define LARGE HB_H2MEM_CLASSES
/* Classes 0 .. FINE-1 step by STEP bytes (16, 32, ... 512); the classes
 * above double (1024, 2048, 4096). */
#define STEP 16u
#define FINE 32u

static size_t class_size(uint32_t cls)
{
    return cls < FINE ? (size_t)STEP * (cls + 1) : (size_t)(STEP * FINE) << (cls - FINE + 1);
}

/* The class that holds n bytes; LARGE above the largest. */
static uint32_t class_of(size_t n)
{
    if (n <= STEP * FINE)
        return n == 0 ? 0 : (uint32_t)((n - 1) / STEP);
    if (n > class_size(HB_H2MEM_CLASSES - 1))
        return LARGE;
    /* The bits of n - 1 say the power of two at or above n (1024: 10). */
    return FINE + (uint32_t)(64 - __builtin_clzll((unsigned long long)(n - 1))) - 10;
}

static void *mem_malloc(size_t n, void *arg)
{
    hb_h2mem *m = arg;
    uint32_t cls = class_of(n);
    hb_h2mem_block *b;
    if (cls != LARGE && m->free[cls] != NULL) {
        b = m->free[cls];
        m->free[cls] = b->next;
        m->kept[cls]--;
        UNPOISON(b + 1, class_size(cls));
        return b + 1;
    }
    size_t size = cls != LARGE ? class_size(cls) : n;
    if (size > SIZE_MAX - sizeof *b)
        return NULL;
    b = malloc(sizeof *b + size);
    if (b == NULL)
        return NULL;
    b->cls = cls;
    return b + 1;
}

static void mem_free(void *p, void *arg)
{
    hb_h2mem *m = arg;
    if (p == NULL)
        return;
    hb_h2mem_block *b = (hb_h2mem_block *)p - 1;
    uint32_t cls = b->cls;
    if (cls == LARGE || m->kept[cls] >= HB_H2MEM_KEEP) {
        free(b);
        return;
    }
    b->next = m->free[cls];
    m->free[cls] = b;
    m->kept[cls]++;
    POISON(b + 1, class_size(cls));
}

static void *mem_calloc(size_t count, size_t size, void *arg)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    void *p = mem_malloc(count * size, arg);
    if (p != NULL)
        memset(p, 0, count * size);
    return p;
}

static void *mem_realloc(void *p, size_t n, void *arg)
{
    if (p == NULL)
        return mem_malloc(n, arg);
    if (n == 0) {
        mem_free(p, arg);
        return NULL;
    }
    hb_h2mem_block *b = (hb_h2mem_block *)p - 1;
    if (b->cls == LARGE) {
        if (class_of(n) == LARGE) {
            hb_h2mem_block *grown = realloc(b, sizeof *b + n);
            return grown != NULL ? grown + 1 : NULL;
        }
    } else if (n <= class_size(b->cls)) {
        return p; /* it fits where it is */
    }
    /* Another class: the old bytes (all of them, or as many as fit) move. */
    size_t had = b->cls == LARGE ? n : class_size(b->cls);
    void *q = mem_malloc(n, arg);
    if (q == NULL)
        return NULL; /* p is untouched, as realloc leaves it */
    memcpy(q, p, had < n ? had : n);
    mem_free(p, arg);
    return q;
}

void hb_h2mem_init(hb_h2mem *m)
{
    memset(m, 0, sizeof *m);
    m->mem.mem_user_data = m;
    m->mem.malloc = mem_malloc;
    m->mem.free = mem_free;
    m->mem.calloc = mem_calloc;
    m->mem.realloc = mem_realloc;
}

void hb_h2mem_release(hb_h2mem *m)
{
    for (int cls = 0; cls < HB_H2MEM_CLASSES; cls++) {
        while (m->free[cls] != NULL) {
            hb_h2mem_block *b = m->free[cls];
            m->free[cls] = b->next;
            free(b);
        }
        m->kept[cls] = 0;
    }
}
