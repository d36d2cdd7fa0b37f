/* Learn XOR with a 2-16-2 MLP: the whole training loop of the public API. */
#include <stdio.h>
#include <everyo/nn.h>

static unsigned char persist[1 << 16], step[1 << 16]; /* all the memory it uses */

int main(void)
{
    float x[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    int32_t y[4] = {0, 1, 1, 0};
    eo_ctx ctx;
    eo_params ps;
    eo_sequential net;
    eo_module l1, l2;
    eo_optimizer opt;
    eo_status s = eo_ctx_init(&ctx, persist, sizeof persist, step, sizeof step);
    eo_seed(&ctx, 1);
    if (s == EO_OK) s = eo_params_init(&ctx, &ps, 8);
    if (s == EO_OK) s = eo_linear_init(&ctx, &ps, EO_CPU, "0", 2, 16, 1, EO_INIT_KAIMING_UNIFORM, &l1);
    if (s == EO_OK) s = eo_linear_init(&ctx, &ps, EO_CPU, "2", 16, 2, 1, EO_INIT_KAIMING_UNIFORM, &l2);
    if (s == EO_OK) s = eo_sequential_init(&ctx, &net, 3);
    if (s == EO_OK) s = eo_sequential_add(&ctx, &net, l1);
    if (s == EO_OK) s = eo_sequential_add(&ctx, &net, eo_tanh_module());
    if (s == EO_OK) s = eo_sequential_add(&ctx, &net, l2);
    if (s == EO_OK) s = eo_adamw_init(&ctx, &opt, &ps, 0.05f, 0.9f, 0.999f, 1e-8f, 0.0f);
    if (s != EO_OK) {
        fprintf(stderr, "setup: %s\n", eo_last_error(&ctx));
        return 1;
    }
    float loss = 0;
    for (int i = 0; i < 300; i++) {
        eo_mark m = eo_mark_get(&ctx); /* everything below lives until the rewind */
        eo_tensor *xt, *yt, *logits, *L;
        const int64_t xs[2] = {4, 2}, ys[1] = {4};
        s = eo_tensor_wrap(&ctx, EO_F32, 2, xs, x, &xt);
        if (s == EO_OK) s = eo_tensor_wrap(&ctx, EO_I32, 1, ys, y, &yt);
        if (s == EO_OK) s = eo_params_zero_grad(&ctx, &ps);
        if (s == EO_OK) s = eo_sequential_forward(&ctx, &net, xt, &logits);
        if (s == EO_OK) s = eo_cross_entropy(&ctx, logits, yt, -100, &L);
        if (s == EO_OK) s = eo_backward(&ctx, L);
        if (s == EO_OK) s = eo_optimizer_step(&ctx, &opt);
        if (s == EO_OK) s = eo_read(&ctx, L, &loss, sizeof loss);
        eo_rewind(&ctx, m);
        if (s != EO_OK) {
            fprintf(stderr, "step %d: %s\n", i, eo_last_error(&ctx));
            return 1;
        }
    }
    printf("XOR: cross-entropy %.4f after 300 steps\n", loss);
    return loss < 0.05f ? 0 : 1;
}
