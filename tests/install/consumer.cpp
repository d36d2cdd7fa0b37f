// tests/install/consumer.cpp — the same check from C++: the headers must
// parse as C++ and their extern "C" guards make the calls link against the
// C library's unmangled names.
#include <cstdio>
#include <cstring>
#include <everyo/everyo.h>
#include <everyo/nn.h>
#include <everyo/transformer.h>

static unsigned char persist[1 << 16], step[1 << 16];

int main()
{
    eo_ctx ctx;
    if (eo_ctx_init(&ctx, persist, sizeof persist, step, sizeof step) != EO_OK)
        return 1;
    eo_tensor *x = nullptr, *y = nullptr;
    const int64_t shape[1] = {3};
    const float v[3] = {-1.0f, 0.0f, 2.0f};
    float out[3];
    if (eo_tensor_new(&ctx, EO_STEP, EO_CPU, EO_F32, 1, shape, &x) != EO_OK ||
        eo_write(&ctx, x, v, sizeof v) != EO_OK || eo_relu(&ctx, x, &y) != EO_OK ||
        eo_read(&ctx, y, out, sizeof out) != EO_OK) {
        std::fprintf(stderr, "everyo: %s\n", eo_last_error(&ctx));
        return 1;
    }
    if (out[0] != 0.0f || out[1] != 0.0f || out[2] != 2.0f)
        return 1;
    // A bad call still gives a status and a message, not a crash.
    if (eo_tensor_new(&ctx, EO_STEP, EO_CPU, EO_F32, 9, shape, &x) == EO_OK)
        return 1;
    std::printf("C++ consumer: EveryO %s OK (%s)\n", eo_version(), eo_status_name(EO_ERR_AXIS));
    return 0;
}
