/* tools/embedded/board.h — what infer_tiny.c needs from where it runs: a
 * way to print a line and a way to stop. board_mps2.c provides them on the
 * MPS2 board (UART0 and semihosting), board_host.c on a hosted system
 * (stdout and exit), so the same program runs in both places and their
 * outputs can be compared line for line. */
#ifndef EO_BOARD_H
#define EO_BOARD_H

void board_puts(const char *s); /* s and a newline */
void board_exit(int status);    /* does not return */
int eo_tiny_main(void);         /* infer_tiny.c: 0 on success */

#endif
