/* tools/embedded/board_mps2.c — a bare Cortex-M4 on an MPS2 board with the
 * AN386 FPGA image (qemu-system-arm -M mps2-an386): the vector table, the
 * reset handler, UART0 for output and semihosting to stop the simulator.
 *
 * Memory map used (mps2-an386.ld): code and constants (the weights, the
 * test images) in the 4 MiB ZBT SSRAM1 at 0x00000000, which the board
 * boots from and QEMU loads the ELF into, standing in for flash; data,
 * bss and the stack in the first 256 KiB of SSRAM2 at 0x20000000. UART0
 * is the CMSDK APB UART at 0x40004000.
 *
 * Nothing here uses the C library, so the reset handler runs before
 * anything else needs initialised memory or the FPU. */
#include <stdint.h>
#include "tools/embedded/board.h"

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[], __stack_top[];

#define REG(a) (*(volatile uint32_t *)(uintptr_t)(a))
#define UART0_DATA REG(0x40004000u)
#define UART0_STATE REG(0x40004004u) /* bit 0: transmit buffer full */
#define UART0_CTRL REG(0x40004008u)  /* bit 0: transmit enable */
#define UART0_BAUDDIV REG(0x40004010u)
#define SCB_CPACR REG(0xE000ED88u)   /* coprocessor access: CP10/CP11 = FPU */

static void uart_putc(char c)
{
    while (UART0_STATE & 1u)
        ;
    UART0_DATA = (uint32_t)(unsigned char)c;
}

void board_puts(const char *s)
{
    while (*s)
        uart_putc(*s++);
    uart_putc('\n');
}

/* Semihosting SYS_EXIT (0x18): ADP_Stopped_ApplicationExit ends QEMU with
 * status 0, anything else (RunTimeErrorUnknown) with status 1. */
void board_exit(int status)
{
    register uint32_t r0 __asm__("r0") = 0x18u;
    register uint32_t r1 __asm__("r1") = status == 0 ? 0x20026u : 0x20023u;
    for (;;)
        __asm__ volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory");
}

void Reset_Handler(void);
void Default_Handler(void);

void Reset_Handler(void)
{
    /* Full access to CP10 and CP11 (the single-precision FPU) before any
     * floating-point instruction; hard-float code uses it everywhere. */
    SCB_CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;)
        *d++ = *s++;
    for (uint32_t *d = __bss_start; d < __bss_end;)
        *d++ = 0;
    UART0_BAUDDIV = 16;
    UART0_CTRL = 1;
    board_exit(eo_tiny_main());
}

void Default_Handler(void)
{
    board_puts("fault");
    board_exit(1);
}

/* The first 16 entries: initial stack pointer, reset, and the core's
 * exceptions (NMI, HardFault, MemManage, BusFault, UsageFault, ...). */
__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)__stack_top, Reset_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0, Default_Handler,
    Default_Handler, 0, Default_Handler, Default_Handler,
};
