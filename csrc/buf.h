/* buf.h: hb_buf, a growable byte buffer with a consumed front.
 *
 * Not synchronised: one owner at a time (the seed's lesson: dropping the
 * synchronised buffers of HttpClient 3 was most of HttpCore's 30-40%).
 *
 *     [ consumed | unread data          | free space        ]
 *     0          off                    len                 cap
 *
 * Readers take bytes at data + off and advance with hb_buf_consume; writers
 * reserve room at data + len, fill it, then hb_buf_commit. Growth is
 * geometric; the fast path (room already there) is an inline comparison.
 */
#ifndef HB_BUF_H
#define HB_BUF_H

#include <stddef.h>

typedef struct {
    char *data; /* NULL until the first reserve */
    size_t off; /* first unread byte */
    size_t len; /* one past the last byte written */
    size_t cap; /* bytes allocated at data */
} hb_buf;

#define HB_BUF_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

/* Grows b so that at least `need` bytes are free after len, first sliding the
 * unread bytes to the front. Offsets into the unread region stay valid
 * relative to b->off; raw pointers into data do not. Returns 0, or -1 with
 * errno = ENOMEM (b is unchanged) when the allocation fails or the size
 * would overflow. */
int hb_buf_grow(hb_buf *b, size_t need);

/* Ensures `need` free bytes after len (see hb_buf_grow). */
static inline int hb_buf_reserve(hb_buf *b, size_t need)
{
    if (b->cap - b->len >= need)
        return 0;
    return hb_buf_grow(b, need);
}

/* Pointer to the unread bytes, and how many there are. */
static inline char *hb_buf_rdptr(const hb_buf *b)
{
    return b->data + b->off;
}
static inline size_t hb_buf_size(const hb_buf *b)
{
    return b->len - b->off;
}

/* Pointer to the free space, and how much there is. */
static inline char *hb_buf_wrptr(const hb_buf *b)
{
    return b->data + b->len;
}
static inline size_t hb_buf_room(const hb_buf *b)
{
    return b->cap - b->len;
}

/* Marks n bytes written at hb_buf_wrptr; n must not exceed hb_buf_room. */
static inline void hb_buf_commit(hb_buf *b, size_t n)
{
    b->len += n;
}

/* Drops n unread bytes from the front; n must not exceed hb_buf_size. When
 * nothing is left unread the buffer rewinds, so steady request/response
 * traffic never slides memory. */
static inline void hb_buf_consume(hb_buf *b, size_t n)
{
    b->off += n;
    if (b->off == b->len)
        b->off = b->len = 0;
}

/* Forgets all bytes; keeps the allocation. */
static inline void hb_buf_clear(hb_buf *b)
{
    b->off = b->len = 0;
}

/* Appends n bytes from p. Returns 0, or -1 with errno = ENOMEM. */
int hb_buf_append(hb_buf *b, const void *p, size_t n);

/* Releases the allocation if it is larger than `keep` bytes, so one huge
 * response does not pin its memory for the life of a connection. Only when
 * nothing is unread. */
void hb_buf_shrink(hb_buf *b, size_t keep);

/* Frees the allocation; b is left empty and reusable. */
void hb_buf_free(hb_buf *b);

#endif
