/* test_h2mem.c: an HTTP/2 session's allocator (csrc/h2mem.c) through the
 * nghttp2_mem it hands the library: every size class and the blocks above
 * them, a freed block given back to its class's next allocation, calloc's
 * zeroes (and its overflow refused), realloc keeping the bytes in place,
 * across classes and above them, the keep limit, and release.
 *
 *   cc -O1 -g -Wall -Wextra -o test_h2mem tests/c/test_h2mem.c csrc/h2mem.c
 *   ./test_h2mem            prints "N passed, N failed"
 */
#include "../../csrc/h2mem.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7);
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 7))
            return 0;
    return 1;
}

static int kept_total(const hb_h2mem *m)
{
    int n = 0;
    for (int c = 0; c < HB_H2MEM_CLASSES; c++)
        n += (int)m->kept[c];
    return n;
}

int main(void)
{
    hb_h2mem pool;
    hb_h2mem_init(&pool);
    nghttp2_mem *mem = hb_h2mem_nghttp2(&pool);
    void *u = mem->mem_user_data;
    check("user data is the pool", u == &pool);

    /* Each size, at a class's edges and between: usable whole, aligned. */
    static const size_t SIZES[] = {0,    1,    15,   16,   17,   31,   32,   33,   64,
                                   65,   100,  255,  256,  257,  511,  512,  513,  1000,
                                   1024, 1025, 2048, 2049, 4095, 4096, 4097, 70000};
    enum { NS = sizeof SIZES / sizeof SIZES[0] };
    void *p[NS];
    for (size_t i = 0; i < NS; i++) {
        p[i] = mem->malloc(SIZES[i], u);
        fill(p[i], SIZES[i], (unsigned)i);
        check("aligned as malloc's", ((uintptr_t)p[i] & 15) == 0);
    }
    int whole = 1;
    for (size_t i = 0; i < NS; i++)
        whole &= same(p[i], SIZES[i], (unsigned)i);
    check("no block overlaps another", whole);
    for (size_t i = 0; i < NS; i++)
        mem->free(p[i], u);
    check("the small blocks kept, the large ones freed", kept_total(&pool) == NS - 2);

    /* A freed block is the next of its class's; another class's is not. */
    void *a = mem->malloc(100, u);
    mem->free(a, u);
    check("the same block again", mem->malloc(110, u) == a);
    void *b = mem->malloc(100, u);
    check("a block still held is not given twice", b != a);
    mem->free(a, u);
    mem->free(b, u);
    mem->free(NULL, u);
    check("free(NULL) is nothing", 1);

    /* nghttp2's three blocks a request (152, 224 and 240 bytes in 1.52)
     * each keep to their own class: a freed one is not the next of
     * another size's (with classes a power of two apart, all three shared
     * the class of 256). */
    void *kinds[3];
    static const size_t KIND[3] = {152, 224, 240};
    for (int i = 0; i < 3; i++)
        kinds[i] = mem->malloc(KIND[i], u);
    int apart = 1;
    for (int i = 0; i < 3; i++) {
        mem->free(kinds[i], u);
        void *other = mem->malloc(KIND[(i + 1) % 3], u);
        apart &= other != kinds[i];
        mem->free(other, u);
        apart &= mem->malloc(KIND[i], u) == kinds[i];
    }
    check("a request's three blocks keep to classes of their own", apart);
    for (int i = 0; i < 3; i++)
        mem->free(kinds[i], u);

    /* calloc zeroes a reused block, and refuses an overflowing product. */
    unsigned char *z = mem->malloc(200, u);
    memset(z, 0xAB, 200);
    mem->free(z, u);
    unsigned char *zc = mem->calloc(50, 4, u);
    int zero = zc != NULL;
    for (int i = 0; zc != NULL && i < 200; i++)
        zero &= zc[i] == 0;
    check("calloc's bytes are zero, in a reused block too", zero);
    mem->free(zc, u);
    check("calloc refuses a count times size over SIZE_MAX",
          mem->calloc(SIZE_MAX / 2, 3, u) == NULL);
    check("malloc refuses a size it cannot head", mem->malloc(SIZE_MAX - 4, u) == NULL);

    /* realloc: in place within the class, moved (bytes kept) across. */
    unsigned char *r = mem->realloc(NULL, 40, u);
    fill(r, 40, 9);
    check("realloc within the class stays", mem->realloc(r, 48, u) == r);
    r = mem->realloc(r, 3000, u);
    check("realloc to a larger class keeps the bytes", r != NULL && same(r, 40, 9));
    fill(r, 3000, 11);
    r = mem->realloc(r, 9000, u);
    check("realloc above the classes keeps the bytes", r != NULL && same(r, 3000, 11));
    fill(r, 9000, 13);
    r = mem->realloc(r, 20000, u);
    check("realloc of a large block keeps the bytes", r != NULL && same(r, 9000, 13));
    r = mem->realloc(r, 500, u);
    check("realloc down into a class keeps what fits", r != NULL && same(r, 500, 13));
    r = mem->realloc(r, 10, u);
    check("realloc down within its class stays", r != NULL && same(r, 10, 13));
    check("realloc to 0 frees, giving NULL", mem->realloc(r, 0, u) == NULL);

    /* The keep limit: a burst above it is freed, not kept. */
    enum { BURST = HB_H2MEM_KEEP + 50 };
    void *many[BURST];
    for (int i = 0; i < BURST; i++)
        many[i] = mem->malloc(48, u);
    for (int i = 0; i < BURST; i++)
        mem->free(many[i], u);
    check("a class keeps at most HB_H2MEM_KEEP", pool.kept[(48 - 1) / 16] == HB_H2MEM_KEEP);

    /* Many rounds of a session's pattern: nothing grows. */
    int steady = 1;
    void *first[3] = {NULL, NULL, NULL};
    for (int round = 0; round < 1000; round++) {
        void *s1 = mem->malloc(200, u), *s2 = mem->calloc(1, 90, u), *s3 = mem->malloc(16, u);
        if (round == 0) {
            first[0] = s1;
            first[1] = s2;
            first[2] = s3;
        }
        fill(s1, 200, (unsigned)round);
        steady &=
            same(s1, 200, (unsigned)round) && s1 == first[0] && s2 == first[1] && s3 == first[2];
        mem->free(s3, u);
        mem->free(s1, u);
        mem->free(s2, u);
    }
    check("a steady pattern reuses the same blocks", steady);

    hb_h2mem_release(&pool);
    check("release leaves none kept", kept_total(&pool) == 0);
    hb_h2mem_release(&pool);
    check("release twice is safe", kept_total(&pool) == 0);
    void *again = mem->malloc(64, u);
    check("the pool serves again after release", again != NULL);
    mem->free(again, u);
    hb_h2mem_release(&pool);

    return checks_done();
}
