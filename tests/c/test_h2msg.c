/* test_h2msg.c: an HTTP/2 response's rules (csrc/h2msg.c): field values
 * eight bytes at a step against a byte-by-byte reference, a bad byte at
 * every position of every length to 40 (each side of every word edge),
 * names the same way, and whole responses field by field: heads, 1xx, trailers,
 * content-length against the DATA, HEAD, 204 and 304.
 *
 *   cc -O1 -g -Wall -Wextra -o test_h2msg tests/c/test_h2msg.c csrc/h2msg.c csrc/parser.c
 *   ./test_h2msg            prints "N passed, N failed"
 */
#include "../../csrc/h2msg.h"
#include "check.h"

#include <stdio.h>
#include <string.h>

static int reference_value_ok(const unsigned char *p, size_t n)
{
    if (n > 0 && (p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
            return 0;
    return 1;
}

/* Every byte value at every position of every length to 40, in a string
 * of fill0 and of fill1: fast agrees with reference. */
static int agrees(const char *what, int (*fast)(const char *, size_t),
                  int (*reference)(const unsigned char *, size_t), unsigned char fill0,
                  unsigned char fill1)
{
    int agree = 1;
    unsigned char buf[40];
    for (size_t n = 1; n <= sizeof buf; n++)
        for (size_t at = 0; at < n; at++)
            for (int c = 0; c < 256; c++)
                for (int fill = 0; fill < 2; fill++) {
                    memset(buf, fill ? fill1 : fill0, n);
                    buf[at] = (unsigned char)c;
                    if (fast((const char *)buf, n) != reference(buf, n)) {
                        printf("%s: byte %d at %zu of %zu\n", what, c, at, n);
                        agree = 0;
                    }
                }
    return agree;
}

static void values(void)
{
    /* In a value of 'a's and of 0xff (obs-text). */
    check("values: fast path = reference, every byte, place and length",
          agrees("value", hb_h2m_value_ok, reference_value_ok, 'a', 0xff));
    check("value: empty", hb_h2m_value_ok("", 0));
    check("value: text/html; charset=utf-8", hb_h2m_value_ok("text/html; charset=utf-8", 24));
    check("value: a tab inside", hb_h2m_value_ok("a\tb c d e f g h", 15));
    check("value: a leading space", !hb_h2m_value_ok(" ab", 3));
    check("value: a trailing tab", !hb_h2m_value_ok("abcdefghij\t", 11));
    check("value: LF in a long one", !hb_h2m_value_ok("abcdefghijklmnop\nqrstuvwxyz", 27));
    check("value: NUL", !hb_h2m_value_ok("abc\0def", 7));
    check("value: DEL", !hb_h2m_value_ok("abcdefgh\x7f", 9));
}

static int reference_name_ok(const unsigned char *p, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL)))
            return 0;
    }
    return 1;
}

static void names(void)
{
    /* In a name of 'a's and of '-'s (the fast path's two kinds). */
    check("names: fast path = reference, every byte, place and length",
          agrees("name", hb_h2m_name_ok, reference_name_ok, 'a', '-'));
    check("name: content-type", hb_h2m_name_ok("content-type", 12));
    check("name: tchar punctuation", hb_h2m_name_ok("x!#$%&'*+.^_`|~9", 16));
    check("name: empty", !hb_h2m_name_ok("", 0));
    check("name: a capital", !hb_h2m_name_ok("Content-type", 12));
    check("name: a space", !hb_h2m_name_ok("x y", 3));
    check("name: a colon inside", !hb_h2m_name_ok("x:y", 3));
    check("name: NUL", !hb_h2m_name_ok("x\0y", 3));
    check("name: obs-text", !hb_h2m_name_ok("x\xe9", 2));
    check("name: a separator", !hb_h2m_name_ok("x(y)", 4));
}

/* Whole fields through hb_h2m_field (its glance at whole words, then the
 * closer look) against the references: a byte of each kind at every
 * place of names to 20 bytes and values to 40. */
static void fields(void)
{
    static const unsigned char kinds[] = {0,   '\t', '\n', ' ', '!',  '-',  '0', ':',
                                          'A', 'a',  'z',  '{', 0x7f, 0x80, 0xff};
    int agree = 1;
    unsigned char name[20], value[40];
    for (size_t nlen = 1; nlen <= sizeof name; nlen++)
        for (size_t vlen = 1; vlen <= sizeof value; vlen++)
            for (size_t k = 0; k < sizeof kinds; k++)
                for (size_t at = 0; at < nlen + vlen; at++) {
                    memset(name, at % 2 ? '-' : 'b', nlen);
                    memset(value, 'v', vlen);
                    if (at < nlen)
                        name[at] = kinds[k];
                    else
                        value[at - nlen] = kinds[k];
                    hb_h2m m;
                    hb_h2m_start(&m, 0);
                    hb_h2m_block(&m);
                    int bad_status, want = reference_name_ok(name, nlen) &&
                                           reference_value_ok(value, vlen) && name[0] != ':';
                    const char *got = hb_h2m_field(&m, (const char *)name, nlen,
                                                   (const char *)value, vlen, &bad_status);
                    if ((got == NULL) != want) {
                        printf("field: byte %d at %zu, name %zu, value %zu\n", kinds[k], at, nlen,
                               vlen);
                        agree = 0;
                    }
                }
    check("fields: the glance = the references, every kind, place and length", agree);
}

/* One field; returns the defect or NULL. */
static const char *field(hb_h2m *m, const char *name, const char *value)
{
    int bad_status;
    return hb_h2m_field(m, name, strlen(name), value, strlen(value), &bad_status);
}

/* A head of fields name, value, ... (NULL-ended) as one block; returns
 * the first defect, the block's end's included, or NULL. */
static const char *block(hb_h2m *m, int end_stream, const char *const *nv)
{
    hb_h2m_block(m);
    for (; nv[0] != NULL; nv += 2) {
        const char *d = field(m, nv[0], nv[1]);
        if (d != NULL)
            return d;
    }
    const char *d = hb_h2m_block_end(m, end_stream);
    return d != NULL || !end_stream ? d : hb_h2m_end(m);
}

#define FIELDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void heads(void)
{
    hb_h2m m;
    hb_h2m_start(&m, 0);
    check("head: 200, END_STREAM",
          block(&m, 1, FIELDS(":status", "200", "server", "x")) == NULL && m.status == 200);
    hb_h2m_start(&m, 0);
    check("head: no :status", block(&m, 1, FIELDS("server", "x")) != NULL);
    hb_h2m_start(&m, 0);
    check("head: :status after a field",
          block(&m, 1, FIELDS("server", "x", ":status", "200")) != NULL);
    hb_h2m_start(&m, 0);
    check("head: :status twice", block(&m, 1, FIELDS(":status", "200", ":status", "200")) != NULL);
    hb_h2m_start(&m, 0);
    check("head: :path", block(&m, 1, FIELDS(":status", "200", ":path", "/")) != NULL);
    int bad_status;
    hb_h2m_start(&m, 0);
    hb_h2m_block(&m);
    check("head: status 600",
          hb_h2m_field(&m, ":status", 7, "600", 3, &bad_status) != NULL && bad_status);
    hb_h2m_start(&m, 0);
    hb_h2m_block(&m);
    check("head: status 101",
          hb_h2m_field(&m, ":status", 7, "101", 3, &bad_status) != NULL && bad_status);
    const char *specific[] = {"connection",        "keep-alive", "proxy-connection",
                              "transfer-encoding", "upgrade",    NULL};
    for (int i = 0; specific[i] != NULL; i++) {
        hb_h2m_start(&m, 0);
        check(specific[i], block(&m, 1, FIELDS(":status", "200", specific[i], "x")) != NULL);
    }
    hb_h2m_start(&m, 0);
    check("te: trailers", block(&m, 1, FIELDS(":status", "200", "te", "Trailers")) == NULL);
    hb_h2m_start(&m, 0);
    check("te: gzip", block(&m, 1, FIELDS(":status", "200", "te", "gzip")) != NULL);
    hb_h2m_start(&m, 0);
    check("head: a capital in a name the decoder gave as a literal",
          block(&m, 1, FIELDS(":status", "200", "X-A", "1")) != NULL);
}

static void informational(void)
{
    hb_h2m m;
    hb_h2m_start(&m, 0);
    check("1xx then 200", block(&m, 0, FIELDS(":status", "103", "link", "</a>")) == NULL &&
                              m.status == 0 && block(&m, 1, FIELDS(":status", "200")) == NULL &&
                              m.status == 200);
    hb_h2m_start(&m, 0);
    check("1xx with END_STREAM", block(&m, 1, FIELDS(":status", "100")) != NULL);
    hb_h2m_start(&m, 0);
    check("1xx with a content-length",
          block(&m, 0, FIELDS(":status", "100", "content-length", "0")) != NULL);
}

static void bodies(void)
{
    hb_h2m m;
    hb_h2m_start(&m, 0);
    check("length 5, DATA 5",
          block(&m, 0, FIELDS(":status", "200", "content-length", "5")) == NULL &&
              hb_h2m_data(&m, 2) == NULL && hb_h2m_data(&m, 3) == NULL && hb_h2m_end(&m) == NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200", "content-length", "5"));
    check("length 5, DATA 4", hb_h2m_data(&m, 4) == NULL && hb_h2m_end(&m) != NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200", "content-length", "5"));
    check("length 5, DATA 6, at once", hb_h2m_data(&m, 6) != NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200"));
    check("no length: any DATA", hb_h2m_data(&m, 100000) == NULL && hb_h2m_end(&m) == NULL);
    hb_h2m_start(&m, 0);
    check("DATA before the head", hb_h2m_data(&m, 1) != NULL);
    const char *lengths[] = {"", "x5", "5x", "-1", "1234567890123456789", NULL};
    for (int i = 0; lengths[i] != NULL; i++) {
        hb_h2m_start(&m, 0);
        check(lengths[i],
              block(&m, 0, FIELDS(":status", "200", "content-length", lengths[i])) != NULL);
    }
    hb_h2m_start(&m, 0);
    check("a second length",
          block(&m, 0, FIELDS(":status", "200", "content-length", "5", "content-length", "5")) !=
              NULL);
    hb_h2m_start(&m, 1);
    check("HEAD: a length, no DATA",
          block(&m, 1, FIELDS(":status", "200", "content-length", "100")) == NULL);
    hb_h2m_start(&m, 1);
    block(&m, 0, FIELDS(":status", "200", "content-length", "5"));
    check("HEAD: DATA", hb_h2m_data(&m, 5) != NULL);
    hb_h2m_start(&m, 0);
    check("304: a length, no DATA",
          block(&m, 1, FIELDS(":status", "304", "content-length", "100")) == NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "304"));
    check("304: DATA", hb_h2m_data(&m, 1) != NULL);
    hb_h2m_start(&m, 0);
    check("204: length 0", block(&m, 1, FIELDS(":status", "204", "content-length", "0")) == NULL);
    hb_h2m_start(&m, 0);
    check("204: length 5", block(&m, 1, FIELDS(":status", "204", "content-length", "5")) != NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "204"));
    check("204: DATA", hb_h2m_data(&m, 1) != NULL);
}

static void trailers(void)
{
    hb_h2m m;
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200", "content-length", "2"));
    hb_h2m_data(&m, 2);
    check("trailers, END_STREAM", block(&m, 1, FIELDS("x-t", "1")) == NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200"));
    check("trailers without END_STREAM", block(&m, 0, FIELDS("x-t", "1")) != NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200"));
    check("trailers with :status", block(&m, 1, FIELDS(":status", "200")) != NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200", "content-length", "3"));
    hb_h2m_data(&m, 2);
    check("trailers end a body short of its length", block(&m, 1, FIELDS("x-t", "1")) != NULL);
    hb_h2m_start(&m, 0);
    block(&m, 0, FIELDS(":status", "200", "content-length", "2"));
    hb_h2m_data(&m, 2);
    check("a content-length in trailers is not the body's",
          block(&m, 1, FIELDS("content-length", "9")) == NULL);
}

int main(void)
{
    values();
    names();
    fields();
    heads();
    informational();
    bodies();
    trailers();
    return checks_done();
}
