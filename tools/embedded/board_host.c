/* tools/embedded/board_host.c — infer_tiny on a hosted system: lines on
 * stdout, the status as the exit code. The reference the Cortex-M4 run
 * is compared with. */
#include <stdio.h>
#include <stdlib.h>
#include "tools/embedded/board.h"

void board_puts(const char *s) { puts(s); }

void board_exit(int status)
{
    fflush(stdout);
    exit(status);
}

int main(void) { return eo_tiny_main(); }
