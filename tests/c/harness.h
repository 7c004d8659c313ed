/* harness.h: runs the response parser over a byte string the way a
 * connection would, fed whole or in pieces, and sums up what came out, so
 * the unit tests and the fuzz driver can check that the split never
 * matters. */
#ifndef HB_HARNESS_H
#define HB_HARNESS_H

#include "../../csrc/parser.h"

#include <stdio.h>
#include <string.h>

#define SUM_BODY_MAX 4096

typedef struct {
    int rc; /* HB_PARSE_DONE, _MORE (input ran out) or _ERROR */
    const char *error;
    int status, minor_version, keep_alive;
    unsigned num_headers;
    size_t head_len;
    hb_body_kind body;
    unsigned long long content_length;
    unsigned long long body_len; /* body bytes decoded */
    size_t used;                 /* input bytes that belonged to the message */
    size_t kept;                 /* body bytes stored in `bytes` */
    unsigned char bytes[SUM_BODY_MAX];
} summary;

/* Feeds data[0..len) in pieces of `step` bytes (0: whole), or split once
 * at `split` when step is 0 and split is nonzero. */
static inline size_t next_end(size_t at, size_t len, size_t step, size_t split)
{
    size_t end = step ? at + step : (split && at < split ? split : len);
    return end > len ? len : end;
}

static inline void take(summary *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n && s->kept < SUM_BODY_MAX; i++)
        s->bytes[s->kept++] = (unsigned char)p[i];
    s->body_len += n;
}

static inline void run_parser(summary *s, const char *data, size_t len, int flags, size_t step,
                              size_t split)
{
    static hb_response r;
    memset(s, 0, sizeof *s);
    hb_response_reset(&r);
    size_t avail = 0;
    int rc = HB_PARSE_MORE;
    while (rc == HB_PARSE_MORE && avail < len) {
        avail = next_end(avail, len, step, split);
        rc = hb_parse_response(&r, data, avail, flags);
    }
    s->rc = rc;
    if (rc != HB_PARSE_DONE) {
        s->error = rc == HB_PARSE_ERROR ? r.error : NULL;
        return;
    }
    s->status = r.status;
    s->minor_version = r.minor_version;
    s->keep_alive = r.keep_alive;
    s->num_headers = r.num_headers;
    s->head_len = r.head_len;
    s->body = r.body;
    s->content_length = r.content_length;
    /* The body through the product's own decoder, fed the bytes that came
     * with the head first, then piece by piece as they arrive. */
    hb_body b;
    hb_body_init(&b, r.body, r.content_length);
    size_t pos = r.head_len, end = avail;
    for (;;) {
        do {
            size_t used, off, n;
            rc = hb_body_feed(&b, data + pos, end - pos, &used, &off, &n);
            if (rc == HB_PARSE_ERROR)
                break;
            take(s, data + pos + off, n);
            pos += used;
        } while (rc == HB_PARSE_MORE && pos < end);
        if (rc != HB_PARSE_MORE || end == len)
            break;
        end = next_end(end, len, step, split);
    }
    /* The input's end closes the connection: it ends a body read until
     * close; any other body still short of its end stays "more". */
    if (rc == HB_PARSE_MORE && b.kind == HB_BODY_CLOSE)
        rc = hb_body_end(&b);
    s->rc = rc;
    s->error = rc == HB_PARSE_ERROR ? b.error : NULL;
    s->used = rc == HB_PARSE_ERROR ? 0 : pos; /* where it stopped is no result */
}

/* Whether two summaries say the same thing; prints the first difference. */
static inline int same_summary(const summary *a, const summary *b, const char *label)
{
#define DIFF(f, fmt)                                                                               \
    if (a->f != b->f) {                                                                            \
        fprintf(stderr, "%s: " #f " differs: " fmt " vs " fmt "\n", label, a->f, b->f);            \
        return 0;                                                                                  \
    }
    DIFF(rc, "%d")
    DIFF(status, "%d")
    DIFF(minor_version, "%d")
    DIFF(keep_alive, "%d")
    DIFF(num_headers, "%u")
    DIFF(head_len, "%zu")
    DIFF(body, "%d")
    DIFF(body_len, "%llu")
    DIFF(used, "%zu")
    DIFF(kept, "%zu")
#undef DIFF
    if ((a->error == NULL) != (b->error == NULL) || (a->error && strcmp(a->error, b->error) != 0)) {
        fprintf(stderr, "%s: error differs: %s vs %s\n", label, a->error ? a->error : "(none)",
                b->error ? b->error : "(none)");
        return 0;
    }
    if (memcmp(a->bytes, b->bytes, a->kept) != 0) {
        fprintf(stderr, "%s: body bytes differ\n", label);
        return 0;
    }
    return 1;
}

/* Requests: the same, for the server's parser. */
typedef struct {
    int rc, status;
    const char *error;
    size_t head_len;
    uint32_t method_len, target_off, target_len;
    int minor_version, keep_alive, expect_continue;
    unsigned num_headers;
    hb_body_kind body;
    unsigned long long content_length;
} req_summary;

static inline void run_request(req_summary *s, const char *in, size_t len, size_t step,
                               size_t split)
{
    static hb_request r;
    hb_request_reset(&r);
    size_t avail = 0;
    int rc = HB_PARSE_MORE;
    while (rc == HB_PARSE_MORE && avail < len) {
        avail = next_end(avail, len, step, split);
        rc = hb_parse_request(&r, in, avail);
    }
    memset(s, 0, sizeof *s);
    s->rc = rc;
    if (rc == HB_PARSE_ERROR) {
        s->error = r.error;
        s->status = r.status;
    } else if (rc == HB_PARSE_DONE) {
        s->head_len = r.head_len;
        s->method_len = r.method_len;
        s->target_off = r.target_off;
        s->target_len = r.target_len;
        s->minor_version = r.minor_version;
        s->keep_alive = r.keep_alive;
        s->expect_continue = r.expect_continue;
        s->num_headers = r.num_headers;
        s->body = r.body;
        s->content_length = r.content_length;
    }
}

static inline int same_request(const req_summary *a, const req_summary *b)
{
    if ((a->error == NULL) != (b->error == NULL) || (a->error && strcmp(a->error, b->error)))
        return 0;
    return a->rc == b->rc && a->status == b->status && a->head_len == b->head_len &&
           a->method_len == b->method_len && a->target_off == b->target_off &&
           a->target_len == b->target_len && a->minor_version == b->minor_version &&
           a->keep_alive == b->keep_alive && a->expect_continue == b->expect_continue &&
           a->num_headers == b->num_headers && a->body == b->body &&
           a->content_length == b->content_length;
}

/* Built with -DHB_FUZZ_MAIN, a fuzz driver replays the files named on its
 * command line once each, so its seeds are checked without libFuzzer. */
#ifdef HB_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    static uint8_t buf[1 << 20];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (f == NULL) {
            perror(argv[i]);
            return 2;
        }
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        n++;
    }
    printf("%d inputs replayed\n", n);
    return 0;
}
#endif /* HB_FUZZ_MAIN */

#endif
