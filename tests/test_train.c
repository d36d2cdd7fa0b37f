/* tests/test_train.c — the main job in miniature: train the MLP on the
 * first 2,000 Fashion-MNIST training images and check it generalises
 * (> 70% on 2,000 test images), that the same seed gives bit-identical
 * results, and that a checkpoint round trip keeps the accuracy exactly. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tools/train/trainer.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

static eo_train_config small(void)
{
    eo_train_config c;
    eo_train_defaults(&c, EO_MODEL_MLP);
    c.data_dir = FMNIST;
    c.epochs = 5;
    c.threads = 1;
    c.train_subset = 2000;
    c.test_subset = 2000;
    c.quiet = 1;
    c.plot = NULL;
    return c;
}

START_TEST(mlp_on_2000_images_beats_70_percent_deterministically)
{
    char err[512], path[] = "/tmp/eo-test-ckpt-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    eo_train_config c = small();
    c.save = path;
    eo_train_result r1, r2, r3;
    eo_status s = eo_train_run(&c, &r1, NULL, err, sizeof err);
    ck_assert_msg(s == EO_OK, "training failed: %s", err);
    ck_assert_msg(r1.test_accuracy > 0.70, "test accuracy %.3f", r1.test_accuracy);
    /* No memory taken after the first step. */
    ck_assert_uint_eq(r1.step_high_epoch1, r1.step_high_after_first);

    c.save = NULL;
    ck_assert_int_eq(eo_train_run(&c, &r2, NULL, err, sizeof err), EO_OK);
    ck_assert_msg(r1.last_loss == r2.last_loss, "same seed, different loss: %.9g vs %.9g",
                  r1.last_loss, r2.last_loss);

    c.epochs = 0; /* evaluate the saved weights */
    c.load = path;
    ck_assert_int_eq(eo_train_run(&c, &r3, NULL, err, sizeof err), EO_OK);
    ck_assert_msg(r3.test_accuracy == r1.test_accuracy, "reloaded %.4f vs trained %.4f",
                  r3.test_accuracy, r1.test_accuracy);
    unlink(path);
}
END_TEST

Suite *eo_suite_train(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, mlp_on_2000_images_beats_70_percent_deterministically);
    suite_add_tcase(s, tc);
    return s;
}
