/* head.c: hb_head_*, see head.h. */
#include "head.h"

#include <string.h>

char *hb_head_put(char *w, const char *p, size_t n)
{
    memcpy(w, p, n);
    return w + n;
}

char *hb_head_u64(char *w, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0)
        *w++ = tmp[--n];
    return w;
}

char *hb_head_status(char *w, int status, const char *reason, size_t reason_len)
{
    w = HB_HEAD_LIT(w, "HTTP/1.1 ");
    w = hb_head_u64(w, (uint64_t)status);
    *w++ = ' ';
    w = hb_head_put(w, reason, reason_len);
    return HB_HEAD_LIT(w, "\r\n");
}

char *hb_head_field(char *w, const char *name, size_t name_len, const char *value, size_t value_len)
{
    w = hb_head_put(w, name, name_len);
    w = HB_HEAD_LIT(w, ": ");
    w = hb_head_put(w, value, value_len);
    return HB_HEAD_LIT(w, "\r\n");
}

char *hb_head_end(char *w, int close_after, int minor_version)
{
    if (close_after)
        w = HB_HEAD_LIT(w, "Connection: close\r\n");
    else if (minor_version == 0)
        w = HB_HEAD_LIT(w, "Connection: keep-alive\r\n");
    return HB_HEAD_LIT(w, "\r\n");
}
