/* h2mem.h: hb_h2mem_*, an HTTP/2 session's own allocator for libnghttp2
 * (its nghttp2_mem, given to nghttp2_session_{client,server}_new3).
 *
 * nghttp2 allocates and frees per stream and per frame (the stream, the
 * outbound item, the decoded fields' buffers): in a profile of the loop at
 * 10 connections x 10 streams that was 728 instructions a request in
 * glibc's malloc and free, more than httpbench's own code. One session is
 * driven by one thread at a time, so its blocks need no lock: a freed block
 * goes on a list by its size class and the next allocation of that class
 * takes it back, a few instructions. Blocks above the largest class go to
 * malloc and free as before.
 *
 * Bounded: a class keeps at most HB_H2MEM_KEEP freed blocks (the rest are
 * freed), so a burst leaves no more behind than that. Under AddressSanitizer
 * a kept block is poisoned, so a use after nghttp2 freed it is still found.
 *
 * Not synchronised: one thread at a time, like the session it serves.
 */
#ifndef HB_H2MEM_H
#define HB_H2MEM_H

#include <nghttp2/nghttp2.h>
#include <stdint.h>

/* Size classes (usable; 16 more for the block's header): every 16 bytes
 * to 512, then 1024, 2048 and 4096. Fine below 512: nghttp2 allocates
 * three blocks a request of 152, 224 and 240 bytes (1.52), and in one
 * class of 256 each went to whichever came next. At 50 connections x 100
 * streams, perf then sampled 8x as often at the library's first read of a
 * stream's record when its response's HEADERS came (a cold line), and
 * the client spent 0.12-0.15 us a request more (two A/Bs;
 * docs/benchmarks.md). A class a size keeps each kind of block with its
 * kind, as glibc's bins do. */
#define HB_H2MEM_CLASSES 35
/* The most freed blocks a class keeps for reuse. */
#define HB_H2MEM_KEEP 256

typedef struct hb_h2mem_block hb_h2mem_block;

typedef struct {
    hb_h2mem_block *free[HB_H2MEM_CLASSES];
    uint32_t kept[HB_H2MEM_CLASSES];
    nghttp2_mem mem; /* its functions, with mem_user_data this pool */
} hb_h2mem;

/* Makes m an empty pool; hb_h2mem_nghttp2(m) is then what the session is
 * made with. m must not move while a session uses it. */
void hb_h2mem_init(hb_h2mem *m);

/* The nghttp2_mem that allocates from m. */
static inline nghttp2_mem *hb_h2mem_nghttp2(hb_h2mem *m)
{
    return &m->mem;
}

/* Frees the blocks m keeps. Call it after nghttp2_session_del (which
 * gives back every block the session held); m is then empty and may be
 * used again. Safe on a pool never used, and twice. */
void hb_h2mem_release(hb_h2mem *m);

#endif
