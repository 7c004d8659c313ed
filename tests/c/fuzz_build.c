/* fuzz_build.c: libFuzzer driver for the client's request builder: any
 * method, target, header fields and body either build a request that the
 * server's request parser accepts, with those very parts, or are refused
 * with a message. Never a request the parser refuses or reads otherwise.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_build \
 *       tests/c/fuzz_build.c csrc/request.c csrc/parser.c csrc/buf.c
 *   ./fuzz_build -max_total_time=60 tests/c/corpus_build
 *
 * Input: a byte giving the number of fields (low 4 bits), then each part
 * (method, target, name and value per field, body) as a length byte and
 * that many bytes. Built with -DHB_FUZZ_MAIN instead, it replays the files
 * it is given (harness.h).
 */
#include "harness.h"

#include "../../csrc/request.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next length-prefixed part; 0 when the input ran out. */
static int next_part(const uint8_t **p, const uint8_t *end, hb_span *out)
{
    if (*p >= end)
        return 0;
    size_t n = **p;
    (*p)++;
    if ((size_t)(end - *p) < n)
        n = (size_t)(end - *p);
    out->p = (const char *)*p;
    out->n = n;
    *p += n;
    return 1;
}

static int same(const char *a, size_t an, hb_span b)
{
    return an == b.n && memcmp(a, b.p, an) == 0;
}

/* The value as the parser reports it: optional whitespace trimmed. */
static hb_span trimmed(hb_span v)
{
    while (v.n > 0 && (v.p[0] == ' ' || v.p[0] == '\t')) {
        v.p++;
        v.n--;
    }
    while (v.n > 0 && (v.p[v.n - 1] == ' ' || v.p[v.n - 1] == '\t'))
        v.n--;
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    if (size == 0)
        return 0;
    size_t nfields = *p++ & 15;
    hb_span method, target, body;
    hb_field fields[16];
    if (!next_part(&p, end, &method) || !next_part(&p, end, &target))
        return 0;
    for (size_t i = 0; i < nfields; i++)
        if (!next_part(&p, end, &fields[i].name) || !next_part(&p, end, &fields[i].value))
            return 0;
    int has_body = next_part(&p, end, &body);
    if (!has_body)
        body = (hb_span){NULL, 0};

    hb_buf out = HB_BUF_INIT;
    char err[160] = "";
    int flags;
    hb_span host = {"example:80", 10};
    hb_req_parts req = {method, target, fields, nfields, body, host, {"", 0}, {"", 0}};
    int rc = hb_req_build(&out, &req, 1 << 20, &flags, err, sizeof err);
    if (rc != 0) {
        if (rc == -1 && err[0] == 0)
            abort(); /* refused without saying why */
        hb_buf_free(&out);
        return 0;
    }
    static hb_request r;
    hb_request_reset(&r);
    const char *b = hb_buf_rdptr(&out);
    size_t len = hb_buf_size(&out);
    if (hb_parse_request(&r, b, len) != HB_PARSE_DONE)
        abort(); /* built what the server refuses */
    if (r.head_len + body.n != len || r.method_len != method.n || !same(b, r.method_len, method) ||
        !same(b + r.target_off, r.target_len, target) || r.num_headers < nfields)
        abort();
    for (size_t i = 0; i < nfields; i++) {
        const hb_header *h = &r.headers[i];
        if (!same(b + h->name_off, h->name_len, fields[i].name) ||
            !same(b + h->value_off, h->value_len, trimmed(fields[i].value)))
            abort();
    }
    if (has_body && body.n > 0 && (r.body != HB_BODY_LENGTH || r.content_length != body.n))
        abort();
    if (body.n == 0 && r.body != HB_BODY_NONE)
        abort();
    hb_buf_free(&out);
    return 0;
}
