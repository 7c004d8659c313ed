/* fuzz_response.c: libFuzzer driver for the response parser and the
 * chunked decoder. Whatever the bytes, parsing them whole, byte by byte,
 * in 3-byte pieces and split once must agree, and nothing may read or
 * write out of bounds (run under ASan and UBSan).
 *
 * The first input byte picks the flags (bit 0: the request was HEAD) and,
 * with the second, the split point; the rest is the response.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_response \
 *       tests/c/fuzz_response.c csrc/parser.c
 *   ./fuzz_response -max_total_time=60 tests/c/corpus
 *
 * Built with -DHB_FUZZ_MAIN instead, it runs the files named on its command
 * line once each, so the seeds are checked without libFuzzer.
 */
#include "harness.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static summary whole, other;
    if (size < 2)
        return 0;
    int flags = data[0] & 1 ? HB_PARSE_HEAD_REQUEST : 0;
    size_t split = ((size_t)data[0] << 8 | data[1]) >> 1;
    const char *msg = (const char *)data + 2;
    size_t len = size - 2;
    if (len > 0)
        split = 1 + split % len;

    run_parser(&whole, msg, len, flags, 0, 0);
    run_parser(&other, msg, len, flags, 1, 0);
    if (!same_summary(&whole, &other, "byte by byte"))
        abort();
    run_parser(&other, msg, len, flags, 3, 0);
    if (!same_summary(&whole, &other, "3-byte pieces"))
        abort();
    run_parser(&other, msg, len, flags, 0, split);
    if (!same_summary(&whole, &other, "split once"))
        abort();
    /* What the parser reports must lie inside the input. */
    if (whole.head_len > len || whole.used > len)
        abort();
    return 0;
}
