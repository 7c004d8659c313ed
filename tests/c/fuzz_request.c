/* fuzz_request.c: libFuzzer driver for the request parser. Whatever the
 * bytes, parsing them whole, byte by byte and split once must agree, and
 * nothing may read or write out of bounds. The first byte picks the split.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_request \
 *       tests/c/fuzz_request.c csrc/parser.c
 *   ./fuzz_request -max_total_time=60 tests/c/corpus_request
 *
 * Built with -DHB_FUZZ_MAIN instead, it replays the files it is given.
 */
#include "harness.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    req_summary whole, other;
    if (size < 1)
        return 0;
    const char *msg = (const char *)data + 1;
    size_t len = size - 1, split = len ? 1 + data[0] % len : 0;
    run_request(&whole, msg, len, 0, 0);
    run_request(&other, msg, len, 1, 0);
    if (!same_request(&whole, &other))
        abort();
    run_request(&other, msg, len, 0, split);
    if (!same_request(&whole, &other))
        abort();
    if (whole.head_len > len ||
        (whole.rc == HB_PARSE_DONE && whole.target_off + whole.target_len > whole.head_len))
        abort();
    if (whole.rc == HB_PARSE_ERROR && (whole.status < 400 || whole.status > 505))
        abort();
    return 0;
}
