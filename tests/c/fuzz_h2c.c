/* fuzz_h2c.c: libFuzzer driver for the client's HTTP/2 frame reader: a
 * session with two requests submitted takes any bytes a server may send
 * (in two reads, split where the first byte says), and must end each
 * stream at most once, never crash, and keep its counts straight: streams
 * open = submitted - closed, bodies still going out at most the open.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_h2c tests/c/fuzz_h2c.c \
 *       csrc/h2.c csrc/h2mem.c csrc/h2msg.c csrc/parser.c csrc/buf.c -lnghttp2
 *   ./fuzz_h2c -max_total_time=60 tests/c/corpus_h2c
 *
 * Built with -DHB_FUZZ_MAIN instead, it replays the files it is given.
 */
#include "harness.h"

#include "../../csrc/h2.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    int closed;
    int status;
    size_t body;
} fuzz_stream;

static void on_head(void *owner, void *stream, int status)
{
    (void)owner;
    fuzz_stream *f = stream;
    if (status < 200 || status > 999 || f->closed)
        abort();
    f->status = status;
}

static void on_data(void *owner, void *stream, const char *p, size_t n)
{
    (void)owner;
    (void)p;
    fuzz_stream *f = stream;
    if (f->closed)
        abort();
    f->body += n;
}

static void on_closed(void *owner, void *stream, int how, uint32_t code)
{
    (void)code;
    int *closed = owner;
    fuzz_stream *f = stream;
    if (f->closed || how < HB_H2_DONE || how > HB_H2_BROKEN)
        abort();
    f->closed = 1;
    (*closed)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: fuzz\r\n\r\n";
    static const char post[] = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
    hb_h2_req reqs[2];
    char err[160];
    if (hb_h2_req_from_http1(&reqs[0], get, sizeof get - 1, "http", err, sizeof err) != 0 ||
        hb_h2_req_from_http1(&reqs[1], post, sizeof post - 1, "http", err, sizeof err) != 0)
        abort();
    int closed = 0;
    hb_h2_hooks hooks = {on_head, NULL, on_data, on_closed};
    hb_h2_config cfg = {0, 65536, 100};
    hb_h2 *h = hb_h2_new(&cfg, &hooks, &closed);
    if (h == NULL)
        abort();
    fuzz_stream fs[2];
    memset(fs, 0, sizeof fs);
    int32_t id;
    int submitted = 0;
    for (int i = 0; i < 2; i++)
        submitted += hb_h2_submit(h, &reqs[i], &fs[i], &id) != NULL;
    hb_buf out = HB_BUF_INIT;
    if (hb_h2_output(h, &out) != 0 || hb_buf_size(&out) < HB_H2_PREFACE_LEN)
        abort();
    size_t cut = size > 0 ? data[0] % (size + 1) : 0;
    if (hb_h2_input(h, (const char *)data, cut) == 0) {
        hb_buf_clear(&out);
        hb_h2_output(h, &out);
        hb_h2_input(h, (const char *)data + cut, size - cut);
        hb_buf_clear(&out);
        hb_h2_output(h, &out);
    }
    if (hb_h2_open_streams(h) != submitted - closed)
        abort();
    /* (A body still going out is an open stream's: never more, no wrap.) */
    if (hb_h2_stats_of(h)->sending > (uint32_t)hb_h2_open_streams(h))
        abort();
    hb_h2_free(h);
    hb_buf_free(&out);
    hb_h2_req_free(&reqs[0]);
    hb_h2_req_free(&reqs[1]);
    return 0;
}
