/* tests/install/consumer.c — a C program that knows EveryO only as an
 * installed package: <everyo/...> headers and pkg-config's flags. It checks
 * that header and library agree on the version and runs a tiny op with a
 * backward pass, so a broken export list or header fails here. */
#include <stdio.h>
#include <string.h>
#include <everyo/everyo.h>
#include <everyo/nn.h>
#include <everyo/transformer.h>

static unsigned char persist[1 << 16], step[1 << 16];

int main(void)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", EO_VERSION_MAJOR, EO_VERSION_MINOR, EO_VERSION_PATCH);
    if (strcmp(want, eo_version()) != 0) {
        fprintf(stderr, "header %s, library %s\n", want, eo_version());
        return 1;
    }
    eo_ctx ctx;
    eo_tensor *w, *y, *loss;
    const int64_t shape[2] = {2, 2};
    const float one[4] = {1, 2, 3, 4};
    float g[4];
    if (eo_ctx_init(&ctx, persist, sizeof persist, step, sizeof step) != EO_OK ||
        eo_param_new(&ctx, EO_CPU, "w", 2, shape, &w) != EO_OK ||
        eo_write(&ctx, w, one, sizeof one) != EO_OK ||
        eo_matmul(&ctx, w, w, 0, 0, &y) != EO_OK || eo_sum_all(&ctx, y, &loss) != EO_OK ||
        eo_backward(&ctx, loss) != EO_OK || eo_read(&ctx, w->grad, g, sizeof g) != EO_OK) {
        fprintf(stderr, "everyo: %s\n", eo_last_error(&ctx));
        return 1;
    }
    /* d sum(W W) / dW[a][b] = (row b of W summed) + (column a of W summed). */
    const float expect[4] = {3 + 4, 7 + 4, 3 + 6, 7 + 6};
    for (int i = 0; i < 4; i++)
        if (g[i] != expect[i]) {
            fprintf(stderr, "grad[%d] = %g, expected %g\n", i, g[i], expect[i]);
            return 1;
        }
    printf("C consumer: EveryO %s OK\n", eo_version());
    return 0;
}
