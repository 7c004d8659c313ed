/* buf.c: the out-of-line half of hb_buf (growth and release). */
#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Smallest allocation: one read of a typical response fits without growth. */
#define HB_BUF_MIN 16384

int hb_buf_grow(hb_buf *b, size_t need)
{
    size_t used = b->len - b->off;

    if (b->off > 0) {
        /* Slide first: after a partial consume the room may already be there. */
        memmove(b->data, b->data + b->off, used);
        b->off = 0;
        b->len = used;
        if (b->cap - used >= need)
            return 0;
    }
    if (need > SIZE_MAX - used) {
        errno = ENOMEM;
        return -1;
    }
    size_t want = used + need;
    size_t cap = b->cap ? b->cap : HB_BUF_MIN;
    while (cap < want) {
        if (cap > SIZE_MAX / 2) {
            cap = want;
            break;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        errno = ENOMEM;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int hb_buf_append(hb_buf *b, const void *p, size_t n)
{
    if (hb_buf_reserve(b, n) != 0)
        return -1;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void hb_buf_shrink(hb_buf *b, size_t keep)
{
    if (b->cap > keep && b->off == b->len)
        hb_buf_free(b);
}

void hb_buf_free(hb_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->off = b->len = b->cap = 0;
}
