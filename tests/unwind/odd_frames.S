/*
 * Hand-written frames of the test stacks (frames.h) that compilers do not
 * make: 'o', an rbp-based frame whose rbp is saved below another register
 * (CFA = rbp + 24); 'x', a CFA given as a DWARF expression (as in PLT
 * entries), which the fast walker leaves to libunwind.
 */
    .text
    .globl fu_frame_rbp_late
    .type fu_frame_rbp_late, @function
fu_frame_rbp_late:
    .cfi_startproc
    pushq %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbx, -16
    pushq %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbp, -24
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    subq $8, %rsp
    call fu_next@PLT
    movq %rbp, %rsp
    popq %rbp
    .cfi_def_cfa %rsp, 16
    popq %rbx
    .cfi_def_cfa_offset 8
    ret
    .cfi_endproc
    .size fu_frame_rbp_late, .-fu_frame_rbp_late

    .globl fu_frame_cfa_expr
    .type fu_frame_cfa_expr, @function
fu_frame_cfa_expr:
    .cfi_startproc
    subq $8, %rsp
    /* DW_CFA_def_cfa_expression: DW_OP_breg7 (rsp) 16 */
    .cfi_escape 0x0f, 0x02, 0x77, 0x10
    call fu_next@PLT
    addq $8, %rsp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size fu_frame_cfa_expr, .-fu_frame_cfa_expr
    .section .note.GNU-stack,"",@progbits
