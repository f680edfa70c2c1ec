/*
 * fu_swap_entry(cb, arg): calls cb(arg) from a frame of FRAME_BYTES + 16
 * bytes whose free slots all hold 0x1000. Built twice (16 and 80 bytes):
 * the two libraries have the same size and code layout, so the second,
 * loaded where the first was, has its return address at the same place
 * with a different rule. A stale rule of the small frame applied to the
 * big one reads 0x1000 as the return address (the walk stops there).
 */
#ifndef FRAME_BYTES
#error "FRAME_BYTES"
#endif
    .text
    .globl fu_swap_entry
    .type fu_swap_entry, @function
fu_swap_entry:
    .cfi_startproc
    pushq %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbx, -16
    subq $FRAME_BYTES, %rsp
    .cfi_adjust_cfa_offset FRAME_BYTES
    movl $(FRAME_BYTES / 8), %ecx
1:  movq $0x1000, -8(%rsp,%rcx,8)
    decl %ecx
    jnz 1b
    movq %rdi, %rax
    movq %rsi, %rdi
    call *%rax
    addq $FRAME_BYTES, %rsp
    .cfi_adjust_cfa_offset -FRAME_BYTES
    popq %rbx
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size fu_swap_entry, .-fu_swap_entry
    .section .note.GNU-stack,"",@progbits
